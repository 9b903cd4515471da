/**
 * A syscall result that is already JSON text (rows read from the store). It is spliced into the
 * response as-is, so rows cross into the isolate without being parsed and re-serialized on the host.
 */
export class RawJson {
  constructor(readonly json: string) {}
}
