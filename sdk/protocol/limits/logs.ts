/**
 * Logs: what is kept of one handler execution's `ctx.log` lines and failures, what a deployment keeps,
 * what the host holds for its stdout, and followed log streams.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const LOG_LIMITS = {
  /** `ctx.log` lines kept per handler execution; later ones are dropped after one notice. Ours. */
  logLinesPerHandler: 100,
  /**
   * Characters of `ctx.log` lines (messages and fields, as kept) per handler execution; later
   * lines are dropped after one notice. Ours: the host's main thread redacts, encodes and writes
   * each one (100 lines of the largest, 2 MB, held it 9-21 ms a call, more with log followers).
   */
  logCharsPerHandler: 256 * 1024,
  /**
   * Bytes of log lines the host holds while its stdout is slow to take them; later lines are
   * dropped. Ours: one tenant's lines grew the heap to 2.1 GB in 26 s behind a slow reader.
   */
  logOutputBufferBytes: 64 * 1024 * 1024,
  /** Characters kept of one `ctx.log` message (longer ones are cut). Ours. */
  logMessageChars: 4096,
  /** Characters of one log line's JSON fields kept (longer ones become `{ truncated }`). Ours. */
  logFieldsChars: 16 * 1024,
  /**
   * Characters kept of a failed handler's stack frames, for the developer's `platform dev` terminal
   * and `platform logs` (never sent to callers). Ours.
   */
  errorStackChars: 4096,
  /**
   * Characters kept of a failed handler's error message, for its caller and the logs (longer ones
   * are cut). Ours: a message is read by people, and every kept or redacted character costs the
   * host's main thread.
   */
  errorMessageChars: 4096,
  /** Characters of log text kept per deployment (messages, fields, failures), oldest lines first out. Ours. */
  logCharsKept: 4 * 1024 * 1024,
  /** Log lines kept per deployment for `platform logs` and the log stream. Ours. */
  logLinesKept: 1000,
  /**
   * How often a followed log stream (`GET /v1/deploys/<id>/logs?follow=1`) checks that the token
   * or dashboard session that opened it still speaks for someone: a replaced developer token or a
   * signed-out session ends its streams within this time. Ours.
   */
  logFollowRecheckMs: 5000,
  /**
   * Bytes of new lines a followed log stream may have unread before it is ended (its client
   * reads too slowly), and log streams one developer (or the operator) may have open at once. Ours.
   */
  logFollowUnreadBytes: 1024 * 1024,
  /** How often a followed log stream's unread lines are looked at (see logFollowUnreadBytes). Ours. */
  logFollowLookMs: 1000,
  logStreamsPerCaller: 8,
} as const;
