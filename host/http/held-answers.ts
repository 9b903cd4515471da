import { LIMITS } from "../../sdk/protocol/index.js";

/**
 * The mutation answers a host's sync sockets hold back until the pushes their writes caused have
 * gone (read-your-writes), counted in characters per client address and in all: an answer waits
 * only while it fits both ({@link LIMITS.syncAnswersHeldCharsPerClient},
 * {@link LIMITS.syncAnswersHeldChars}); one that does not goes at once, ahead of those pushes. A
 * client subscribed to a slow query could otherwise have the host hold every answer it asked for.
 */
export class HeldAnswers {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    private readonly hostChars: number = LIMITS.syncAnswersHeldChars,
    private readonly addressChars: number = LIMITS.syncAnswersHeldCharsPerClient,
  ) {}

  /**
   * Counts an answer of `chars` for `address` when it fits; answers what gives it back (once), or
   * undefined when it does not fit and must go at once.
   */
  hold(address: string, chars: number): (() => void) | undefined {
    const held = this.byAddress.get(address) ?? 0;
    if (held + chars > this.addressChars || this.total + chars > this.hostChars) return undefined;
    this.byAddress.set(address, held + chars);
    this.total += chars;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total -= chars;
      const left = (this.byAddress.get(address) ?? chars) - chars;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    };
  }

  /** Characters held for `address` (all addresses when undefined). */
  heldFor(address?: string): number {
    return address === undefined ? this.total : (this.byAddress.get(address) ?? 0);
  }
}
