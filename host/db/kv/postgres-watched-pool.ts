import pg from "pg";
import { KEEP_ALIVE } from "./postgres-keepalive.js";
import { type PoolWaiter, refusedUnsent, type SilenceWatch } from "./postgres-silence.js";

/**
 * A pool of connections `watch` watches (see {@link SilenceWatch}): while the server is silent a
 * caller asking for a connection is answered at once, having sent nothing, and callers waiting for
 * one when the server is found silent are answered then (a connection the pool hands one later is
 * given back, unused). Waiting callers would otherwise wait for the thaw behind writes in flight.
 */
export function watchedPool(watch: SilenceWatch, config: Omit<pg.PoolConfig, "Client">): pg.Pool {
  class WatchedPool extends pg.Pool {
    // biome-ignore lint/suspicious/noExplicitAny: pg.Pool's connect has a promise and a callback form.
    override connect(...args: any[]): any {
      const callback = args[0] as
        | ((error: Error | undefined, client?: pg.PoolClient, done?: () => void) => void)
        | undefined;
      if (typeof callback !== "function")
        return new Promise<pg.PoolClient>((resolve, reject) =>
          this.connect((error: Error | undefined, client: pg.PoolClient) =>
            error ? reject(error) : resolve(client),
          ),
        );
      if (watch.isSilent) return refusedUnsent(watch.silenceMs, callback);
      let answered = false;
      const waiter: PoolWaiter = {
        fail: (error) => {
          if (answered) return;
          answered = true;
          callback(error);
        },
      };
      const done = watch.awaitConnection(waiter);
      super.connect((error: Error | undefined, client?: pg.PoolClient, release?: () => void) => {
        done();
        if (answered) {
          client?.release();
          return;
        }
        answered = true;
        callback(error, client, release);
      });
      return undefined;
    }
  }
  return new WatchedPool(Object.assign({}, config, KEEP_ALIVE, { Client: watch.clientClass() }));
}
