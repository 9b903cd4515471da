/**
 * A syscall result that is already a whole answer on the wire (a row, rows or a page: see
 * sdk/protocol/syscall-answer.ts). Rows cross into the isolate as the store's text, never parsed
 * and re-serialized on the host; rows and pages stay text in the isolate until the handler touches
 * them.
 */
export class EncodedAnswer {
  constructor(readonly text: string) {}
}
