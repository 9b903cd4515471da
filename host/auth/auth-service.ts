import { randomBytes } from "node:crypto";
import { decodeJwt } from "jose";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import type { HostDatabase, LockFence, RecordStore } from "../db/index.js";
import { refuseDeveloperToken } from "./developers.js";
import {
  type EndHolder,
  type HeldIdentity,
  IDENTITY_ENDED,
  OpenSessions,
  type SessionGate,
} from "./open-sessions.js";
import { SessionRechecks } from "./session-rechecks.js";
import { type GuestToUpgrade, SessionStore, signedOutRecord } from "./session-store.js";
import { type IncarnationLookup, SessionTokens } from "./session-tokens.js";
import {
  accountUserId,
  type IssuedToken,
  namedGuestUserId,
  normaliseEmail,
  type SessionProof,
  type SessionRecord,
} from "./sessions.js";
import { loadTokenSecret } from "./token-secret.js";
import { type TokenClaims, TokenService } from "./tokens.js";

/**
 * Rewrites host record `key` of a deployment in a transaction of the deployment's own: `rewrite`
 * gets the stored value and answers the new one (null: leave it). The deployment service runs it.
 */
export type RecordCommit = (key: Buffer, rewrite: (stored: string | null) => string | null) => Promise<void>;

/** The identity a session speaks for: its record's, never what a token says of it. */
function identityOf(record: SessionRecord): BridgeIdentity {
  return {
    userId: record.userId,
    kind: record.kind,
    ...(record.email ? { email: record.email } : {}),
  };
}

/**
 * Identities of app users: guest and account sessions, the tokens that prove them, renewal and
 * the retirement of upgraded guests, told to the open connections that hold them. Tokens are
 * scoped to one deployment.
 */
export class AuthService {
  private readonly sessions: SessionStore;
  /** Sessions started, their tokens issued and verified (see session-tokens.ts). */
  private readonly tokens: SessionTokens;
  private readonly open: OpenSessions;
  /** Open sessions read again after other hosts' commits (see session-rechecks.ts). */
  private readonly rechecks = new SessionRechecks((gate) => this.endIfRetired(gate));
  private readonly emailCodes: RecordStore<unknown>;

  private constructor(
    db: HostDatabase,
    secret: Uint8Array,
    private readonly incarnationOf: IncarnationLookup,
  ) {
    this.sessions = new SessionStore(db);
    this.emailCodes = db.records<unknown>("email-codes");
    this.tokens = new SessionTokens(this.sessions, new TokenService(secret), incarnationOf);
    this.open = new OpenSessions((deployment, session) =>
      this.sessions.key(deployment, session).toString("hex"),
    );
    // A guest upgraded on another host: its commit wrote the session record.
    db.onAnnouncement((message) => {
      if (message.type !== "commit") return;
      const keys = message.all ? undefined : (message.keys ?? []);
      for (const gate of this.open.noticeCommit(message.deployment, keys))
        this.rechecks.add(message.deployment, gate);
    });
  }

  private async endIfRetired(gate: SessionGate): Promise<void> {
    if (gate.ended) return;
    const record = await this.sessions.byId(gate.sessionId).catch(() => undefined);
    if (!record || record.signedOutAt !== undefined) gate.end(IDENTITY_ENDED.retired);
    else if (record.retiredAt !== undefined) gate.end(IDENTITY_ENDED.upgraded);
  }

  /**
   * Opens the service with the database's token secret (see {@link loadTokenSecret}).
   * `incarnationOf` tells which incarnation of a deployment tokens must belong to.
   */
  static async open(db: HostDatabase, incarnationOf: IncarnationLookup): Promise<AuthService> {
    return new AuthService(db, await loadTokenSecret(db), incarnationOf);
  }

  /** A new protected guest: `guest:<random>`, or `guest:<name>` where naming is allowed (dev). */
  signInGuest(deployment: string, name?: string): Promise<IssuedToken> {
    const userId =
      name === undefined ? `guest:${randomBytes(12).toString("base64url")}` : namedGuestUserId(name);
    return this.tokens.start(deployment, "guest", userId);
  }

  /** A session for a verified email (the caller verified it). */
  signInAccount(deployment: string, email: string, incarnation?: string | null): Promise<IssuedToken> {
    const normalised = normaliseEmail(email);
    return this.tokens.start(
      deployment,
      "account",
      accountUserId(deployment, normalised),
      normalised,
      incarnation,
    );
  }

  /**
   * Whether `email` (checked: `bad_request` when invalid) is an account of `deployment` as it is
   * now: it signed in there at least once (one key: see AccountIndex).
   */
  async accountExists(deployment: string, email: string): Promise<boolean> {
    const normalised = normaliseEmail(email);
    const incarnation = await this.incarnationOf(deployment);
    return incarnation !== undefined && this.sessions.hasAccount(deployment, normalised, incarnation);
  }

  /** Marks the accounts of sessions stored by earlier versions (once per database; see AccountIndex). */
  markEarlierAccounts(stopping: () => boolean): Promise<void> {
    return this.sessions.markEarlierAccounts(stopping);
  }

  /** Deletes the records of sessions no token can use any more (see SessionStore). */
  sweepEndedSessions(now?: number): Promise<number> {
    return this.sessions.sweepEnded(now);
  }

  /**
   * Removes every session and pending email code of deleted deployment `id` (idempotent). Tokens
   * of its sessions are refused anyway: a new deployment with the same id has another incarnation.
   */
  async purgeDeployment(id: string, _quotaOwner?: string, fence?: LockFence): Promise<void> {
    await this.sessions.purge(id, fence);
    await this.emailCodes.deletePrefix(`${id}/`, fence);
  }

  /** The record of the session `claims` name, live and matching them (see SessionStore.live). */
  private liveSession(claims: TokenClaims): Promise<SessionRecord> {
    return this.sessions.live(claims);
  }

  private sessionProof(claims: TokenClaims): SessionProof {
    return this.sessions.proof(claims.deployment, claims.session);
  }

  /** The identity a request's bearer token proves, or throws `unauthorized`. */
  async authenticate(deployment: string, token: string): Promise<BridgeIdentity> {
    return (await this.authenticateCaller(deployment, token)).identity;
  }

  /**
   * The identity a request's bearer token proves and the proof of its session, which the call's
   * transaction checks again if it writes; throws `unauthorized`.
   */
  async authenticateCaller(
    deployment: string,
    token: string,
  ): Promise<{ identity: BridgeIdentity; session: SessionProof }> {
    refuseDeveloperToken(token);
    const claims = await this.tokens.verify(token, deployment, false);
    const record = await this.liveSession(claims);
    return { identity: identityOf(record), session: this.sessionProof(claims) };
  }

  /**
   * The identity `token` proves, held by an open connection until `release()`: `end` is called
   * when the session is retired (a guest upgrade, here or on another host). The holder is
   * registered before the session is checked, so a retirement either is seen now or ends it.
   */
  async holdIdentity(deployment: string, token: string, end: EndHolder): Promise<HeldIdentity> {
    refuseDeveloperToken(token);
    const claims = await this.tokens.verify(token, deployment, false);
    const { gate, release } = this.open.hold(deployment, claims.session, end);
    let record: SessionRecord;
    try {
      record = await this.liveSession(claims);
    } catch (error) {
      release();
      throw error;
    }
    return {
      identity: identityOf(record),
      session: this.sessionProof(claims),
      gate,
      expiresAt: (decodeJwt(token).exp ?? 0) * 1000,
      release,
    };
  }

  /**
   * Runs `upgrade`, which retires guest `session` when its result says `upgraded`, once the
   * session's writes in flight on open connections finished (new ones wait); then ends every
   * connection that holds the guest.
   */
  retireGuest<T extends { upgraded: boolean }>(
    deployment: string,
    session: string,
    upgrade: () => Promise<T>,
  ): Promise<T> {
    return this.open.retire(
      deployment,
      session,
      IDENTITY_ENDED.upgraded,
      upgrade,
      (result) => result.upgraded,
    );
  }

  /**
   * Signs `token`'s session out: `commit` rewrites its record (marked signed out) in a transaction
   * of the deployment, ordered with the mutations that check the session (see SessionProof) and
   * announced by its commit to the other hosts, which close their sockets holding it. Once the
   * session's socket writes in flight here are done, this host's sockets holding it close (4001).
   * Neither the token nor any renewal of it works again; the account stays. An expired token
   * within the renewal window may sign out too; signing out twice changes nothing.
   */
  async signOut(deployment: string, token: string, commit: RecordCommit): Promise<void> {
    refuseDeveloperToken(token);
    const claims = await this.tokens.verify(token, deployment, true);
    const key = this.sessions.key(deployment, claims.session);
    await this.open.retire(
      deployment,
      claims.session,
      IDENTITY_ENDED.retired,
      () => commit(key, signedOutRecord),
      () => true,
    );
  }

  /** A fresh token for the same session (also for an expired token within the renewal window). */
  async renew(deployment: string, token: string): Promise<IssuedToken> {
    const claims = await this.tokens.verify(token, deployment, true);
    return this.tokens.issue(await this.liveSession(claims), claims.issuedAt);
  }

  /**
   * The guest a sign-in is upgrading: verified (an expired token is accepted inside the renewal
   * window, so a pending upgrade can be finished later), or null when the token is not a guest's
   * or the guest was already upgraded; `unauthorized` when it was not issued for its session.
   */
  async guestToUpgrade(deployment: string, token: string): Promise<GuestToUpgrade | null> {
    const claims = await this.tokens.verify(token, deployment, true);
    if (claims.kind !== "guest") return null;
    return this.sessions.upgradable(claims);
  }
}
