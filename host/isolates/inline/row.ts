/**
 * The executions one shared inline entry goes through (a row of starts or of answers: `inARow` in
 * runtime/index.ts), in the runtime's order, and whose turn it is. A turn ends only when the
 * execution whose turn it is hands control back to the host (a call the host cannot answer at once,
 * or its response), the points where the runtime moves on; a crossing by any other execution (a
 * handler may keep another's `ctx`) ends nothing and charges nothing.
 */
export class InlineRow {
  private turn = 0;

  constructor(readonly members: readonly number[]) {}

  /** The execution whose turn it is; undefined once every one has handed back. */
  get current(): number | undefined {
    return this.members[this.turn];
  }

  /** Execution `requestId` handed control back; true when that ended its turn. */
  handedBack(requestId: number): boolean {
    if (this.members[this.turn] !== requestId) return false;
    this.turn++;
    return true;
  }

  /** How many the runtime reached: those whose turn ended, and the one whose turn it is. */
  get reached(): number {
    return Math.min(this.turn + 1, this.members.length);
  }
}
