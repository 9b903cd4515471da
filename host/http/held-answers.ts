import { LIMITS } from "../../sdk/protocol/index.js";

/** The part of the host's characters one deployment's answers may hold: another's keep the rest. */
const DEPLOYMENT_SHARE = 1 / 2;

/**
 * The mutation answers a host's sync sockets hold back until the pushes their writes caused have
 * gone (read-your-writes), counted in characters per client address, per deployment and in all:
 * an answer waits only while it fits ({@link LIMITS.syncAnswersHeldCharsPerClient}, half of
 * {@link LIMITS.syncAnswersHeldChars} for one deployment, all of it); one that does not goes at
 * once, ahead of those pushes. A client subscribed to a slow query could otherwise have the host
 * hold every answer it asked for, and one tenant's clients filling it would take read-your-writes
 * from every other tenant's.
 */
export class HeldAnswers {
  private total = 0;
  /** Characters held by owner: `a:<address>` and `d:<deployment>`. */
  private readonly byOwner = new Map<string, number>();

  constructor(
    private readonly hostChars: number = LIMITS.syncAnswersHeldChars,
    private readonly addressChars: number = LIMITS.syncAnswersHeldCharsPerClient,
  ) {}

  /**
   * Counts an answer of `chars` for `address` and `deployment` when it fits; answers what gives it
   * back (once), or undefined when it does not fit and must go at once.
   */
  hold(address: string, deployment: string, chars: number): (() => void) | undefined {
    const owners: Array<[string, number]> = [
      [`a:${address}`, this.addressChars],
      [`d:${deployment}`, this.hostChars * DEPLOYMENT_SHARE],
    ];
    if (this.total + chars > this.hostChars) return undefined;
    for (const [owner, most] of owners) if (this.heldBy(owner) + chars > most) return undefined;
    this.total += chars;
    for (const [owner] of owners) this.byOwner.set(owner, this.heldBy(owner) + chars);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total -= chars;
      for (const [owner] of owners) {
        const left = this.heldBy(owner) - chars;
        if (left > 0) this.byOwner.set(owner, left);
        else this.byOwner.delete(owner);
      }
    };
  }

  /** Characters held: in all, or for one client address or deployment. */
  heldFor(owner?: { address: string } | { deployment: string }): number {
    if (owner === undefined) return this.total;
    return this.heldBy("address" in owner ? `a:${owner.address}` : `d:${owner.deployment}`);
  }

  private heldBy(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }
}
