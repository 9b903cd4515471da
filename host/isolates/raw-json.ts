/**
 * A syscall result that is already JSON text (a row read from the store). It is spliced into the
 * response as-is, so rows cross into the isolate without being parsed and re-serialized on the host.
 */
export class RawJson {
  constructor(readonly json: string) {}
}

/**
 * A syscall result that is already a whole answer on the wire (rows or a page, see
 * sdk/protocol/syscall-answer.ts): the isolate keeps the rows' text until the handler touches them.
 */
export class EncodedAnswer {
  constructor(readonly text: string) {}
}
