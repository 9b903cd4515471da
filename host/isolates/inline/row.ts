/**
 * The executions one shared inline entry goes through (a run of starts or of answers: `inARow` in
 * runtime/index.ts), in the runtime's order, and how far it got. The first one's turn begins with
 * the entry; each next one's when the one before hands over its response, or else when the runtime
 * says it begins it (after the one before waited on a call), so the code the one before ran until
 * it suspended is the one before's.
 */
export class InlineRow {
  private begun = 1;

  constructor(readonly members: readonly number[]) {}

  /**
   * The runtime begins `requestId`'s turn, the one before having waited on a call; true when that
   * is the next one's (anything else is ignored).
   */
  began(requestId: number): boolean {
    if (this.members[this.begun] !== requestId) return false;
    this.begun++;
    return true;
  }

  /**
   * `requestId` hands over its response: when its turn it is and another follows, the next one's
   * turn begins (the runtime begins it at once); that one, else undefined.
   */
  answered(requestId: number): number | undefined {
    if (this.members[this.begun - 1] !== requestId || this.begun >= this.members.length) return undefined;
    return this.members[this.begun++];
  }

  /** How many of the members the runtime reached (`began` and `answered` never pass the last). */
  get reached(): number {
    return this.begun;
  }
}
