/**
 * Calls every listener in `listeners` (a copy: a listener may unsubscribe) with `args`. One that
 * throws is reported with `console.error`, as the host reports failures it cannot hand to a
 * caller, and the rest still run: the app's listeners are called from the socket's handlers, where
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
      console.error("platform/client: a listener threw:", error);
    }
  }
}
