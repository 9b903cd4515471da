/**
 * Runs `work` with a signal that aborts it after `ms`, and settles by then whatever `work` does:
 * rejected with an error saying no answer came in time. A host that accepts a connection and never
 * answers would otherwise leave the call pending for good, and a `fetch` of the app's own
 * (`transport.fetch`) may ignore the signal.
 */
export async function withinTime<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`no answer within ${Math.round(ms / 1000)} s`);
      controller.abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), late]);
  } finally {
    clearTimeout(timer);
  }
}
