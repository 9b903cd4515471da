/**
 * The `platform` command: what it reads of a server's answer. A host's answers are bounded by the
 * limits of the other areas, but the CLI may be pointed at a server that is not a host (a wrong
 * `--host`, a proxy, a malicious server), and it read whatever came.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const CLI_LIMITS = {
  /**
   * Bytes of one answer the CLI holds in memory: a whole body (`platform login`'s `/v1/me`, a
   * stored file of `storage get`, an error), or one line of a deploy's or an import's streamed
   * answer. The largest a host sends is a deploy's result line, which repeats the declaration's
   * handler names ({@link LIMITS.declarationChars}, 2 Mi characters, at most 3 bytes each in
   * UTF-8) beside the approved emails (one settings request, {@link LIMITS.requestBodyBytes}) and
   * the env names: under 8 MiB; a stored file is at most {@link LIMITS.fileSize}. Ours: an endless
   * `/v1/me` body grew `platform login` to 13.6 GB in 60 s (an attack review, 2026-12-06). Exports
   * and host backups are written to disk as they arrive, and are not bounded by it.
   */
  cliAnswerBytes: 16 * 1024 * 1024,
  /**
   * Bytes of one line of a log stream (`platform logs`): a host's log line is its message, fields,
   * failure message and stack, each cut to a few KiB ({@link LIMITS.logMessageChars},
   * {@link LIMITS.logFieldsChars}, {@link LIMITS.errorMessageChars}, {@link LIMITS.errorStackChars}),
   * at most about 200 KiB of JSON even escaped. Ours: a stream may run for hours, and a 64 MiB line
   * without a newline took `platform logs` 32.6 s and 3.8 GB.
   */
  cliLineBytes: 1024 * 1024,
  /**
   * Bytes of one line of a host backup that `platform host backup` reads (the backup itself is
   * written to disk as it arrives). The largest a host sends is an entries line: under 1 MiB of
   * values and then one more, at most a stored bundle ({@link LIMITS.bundleBytes}, escaped as JSON
   * twice: up to 7 bytes a character, 112 MiB); an object line is one stored file in base64.
   * Ours: a line without end was read whole.
   */
  backupLineBytes: 256 * 1024 * 1024,
} as const;
