/**
 * Reports a listener's exception as an uncaught one is: `reportError` where there is one (browsers:
 * `window.onerror` and error trackers see it), else `console.error` (Node 20 has none).
 */
export function reportListenerError(error: unknown): void {
  const report = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof report === "function") report(error);
  else console.error("platform/client: a listener threw:", error);
}

/**
 * Calls every listener in `listeners` (a copy: a listener may unsubscribe) with `args`. One that
 * throws is reported ({@link reportListenerError}), and the rest still run: the app's listeners are called from the socket's handlers, where
 * an exception would skip the other listeners, leave the connection's state half updated, and, in
 * Node (`ws` calls handlers from its event emitter), end the process.
 */
export function notifyEach<Args extends unknown[]>(
  listeners: Iterable<(...args: Args) => void>,
  ...args: Args
): void {
  for (const listener of [...listeners]) {
    try {
      listener(...args);
    } catch (error) {
      reportListenerError(error);
    }
  }
}
