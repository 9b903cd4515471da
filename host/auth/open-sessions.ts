import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import type { SessionProof } from "./sessions.js";

/** Tells a holder (an open socket) that the identity it was opened with ended, and why. */
export type EndHolder = (reason: string) => void;

/** An identity held by an open connection (see `AuthService.holdIdentity`). */
export interface HeldIdentity {
  identity: BridgeIdentity;
  /** Checked again by each mutation's transaction. */
  session: SessionProof;
  /** Writes as the identity go through this gate; `gate.ended` once it was retired. */
  gate: SessionGate;
  /** When the token expires (ms since the epoch): the holder ends then. */
  expiresAt: number;
  release: () => void;
}

/** Why a holder's identity ended, as told to the client (WebSocket close reasons stay short). */
export const IDENTITY_ENDED = {
  upgraded: "guest upgraded: sign in again",
  retired: "session ended: sign in again",
  expired: "token expired: renew it",
} as const;

/**
 * One session's open holders and the writes they have in flight. A holder that writes as the
 * session checks {@link SessionGate.settling} and {@link SessionGate.ended} first, then counts the
 * write in {@link SessionGate.writing} until it committed or failed.
 */
export class SessionGate {
  /** Writes as this session that were admitted and have not finished. */
  writing = 0;
  /** Set while a retirement of the session runs (new writes wait for it); null otherwise. */
  settling: Promise<void> | null = null;
  /** True once the session was retired or upgraded: no write may be made as it again. */
  ended = false;
  readonly holders = new Set<EndHolder>();
  private drained: (() => void) | null = null;

  constructor(
    /** `<deployment>/<session>`, the id of the session's record. */
    readonly sessionId: string,
    /** The storage key of the session's record, hex (commits name keys so). */
    readonly recordKeyHex: string,
  ) {}

  /** Marks an admitted write finished; wakes a waiting retirement when it was the last. */
  endWrite(): void {
    this.writing--;
    if (this.writing === 0) this.drained?.();
  }

  /** Resolves once no admitted write is in flight. */
  idle(): Promise<void> {
    if (this.writing === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = () => {
        this.drained = null;
        resolve();
      };
    });
  }

  /** Ends the session for every holder. */
  end(reason: string): void {
    this.ended = true;
    for (const holder of [...this.holders]) holder(reason);
  }
}

/**
 * The sessions that open sockets speak for, so identity changes reach them: a retirement (guest
 * upgrade) waits until the session's admitted writes finished, holds new ones while it runs, and
 * when it retired the session ends every holder. The gate is what makes "no write as a retired
 * identity" hold for sockets of this host; sockets of other hosts learn it from the commit that
 * wrote the retired session record (see {@link OpenSessions.noticeCommit}).
 */
export class OpenSessions {
  private readonly gates = new Map<string, SessionGate>();
  private readonly byRecordKey = new Map<string, SessionGate>();
  /** Each deployment's gates: a commit that names no keys is matched against its own only. */
  private readonly byDeployment = new Map<string, Set<SessionGate>>();

  constructor(private readonly recordKeyHex: (deployment: string, session: string) => string) {}

  private gate(deployment: string, session: string): SessionGate {
    const id = `${deployment}/${session}`;
    let gate = this.gates.get(id);
    if (!gate) {
      gate = new SessionGate(id, this.recordKeyHex(deployment, session));
      this.gates.set(id, gate);
      this.byRecordKey.set(gate.recordKeyHex, gate);
      const ofDeployment = this.byDeployment.get(deployment) ?? new Set<SessionGate>();
      ofDeployment.add(gate);
      this.byDeployment.set(deployment, ofDeployment);
    }
    return gate;
  }

  private forgetIfUnused(deployment: string, session: string, gate: SessionGate): void {
    if (gate.holders.size > 0 || gate.settling || gate.writing > 0) return;
    this.gates.delete(`${deployment}/${session}`);
    this.byRecordKey.delete(gate.recordKeyHex);
    const ofDeployment = this.byDeployment.get(deployment);
    ofDeployment?.delete(gate);
    if (ofDeployment?.size === 0) this.byDeployment.delete(deployment);
  }

  /** Registers `end` as a holder of the session; returns its gate and the release function. */
  hold(deployment: string, session: string, end: EndHolder): { gate: SessionGate; release: () => void } {
    const gate = this.gate(deployment, session);
    gate.holders.add(end);
    return {
      gate,
      release: () => {
        gate.holders.delete(end);
        this.forgetIfUnused(deployment, session, gate);
      },
    };
  }

  /**
   * Runs `work`, which retires the session when `retired(result)` says so, once no admitted write
   * of the session is in flight; writes arriving meanwhile wait. Retirements of one session run one
   * after the other. When the session was retired, every holder is ended with `reason`.
   */
  async retire<T>(
    deployment: string,
    session: string,
    reason: string,
    work: () => Promise<T>,
    retired: (result: T) => boolean,
  ): Promise<T> {
    const gate = this.gate(deployment, session);
    while (gate.settling) await gate.settling;
    let settle: () => void = () => {};
    gate.settling = new Promise((resolve) => {
      settle = resolve;
    });
    try {
      await gate.idle();
      const result = await work();
      if (retired(result)) gate.end(reason);
      return result;
    } finally {
      gate.settling = null;
      settle();
      this.forgetIfUnused(deployment, session, gate);
    }
  }

  /**
   * Another host committed writes of `deployment`'s, of `keysHex` (hex storage keys; undefined:
   * any key). Returns the gates whose session record was among them, for the caller to check and
   * end: with no keys, that deployment's gates only (a session's record is written in a commit of
   * its own deployment), never every tenant's.
   */
  noticeCommit(deployment: string, keysHex: readonly string[] | undefined): SessionGate[] {
    if (this.byRecordKey.size === 0) return [];
    // Its own gates only, without walking every tenant's (1.64 ms a commit with 50,000 open).
    if (!keysHex) return [...(this.byDeployment.get(deployment) ?? [])];
    const touched: SessionGate[] = [];
    for (const hex of keysHex) {
      const gate = this.byRecordKey.get(hex);
      if (gate) touched.push(gate);
    }
    return touched;
  }
}
