/** How one transaction's writes move its deployment's row bytes; the group commit checks and stores the sum. */
export class RowBytesChange {
  /** The move of all its writes (negative: they free bytes). */
  total = 0;
  /**
   * The part of {@link total} moved by writes the host makes on its own behalf (a guest upgrade's
   * move of the guest's rows to the account), which alone never gets a mutation refused.
   */
  byHost = 0;

  /** Notes a write's `delta`; `byHandler` false: the host's own write. */
  note(delta: number, byHandler = true): void {
    this.total += delta;
    if (!byHandler) this.byHost += delta;
  }
}
