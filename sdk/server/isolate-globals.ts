/**
 * What a capsule's isolate has beyond the language (ES2022, without the DOM or Node): `console`,
 * whose lines go to the deployment's log (docs/capsules.md#logs). Declared with `platform/server`,
 * so that a capsule checked as its isolate runs, without the DOM library, can use it.
 */
declare global {
  interface Console {
    log(...data: unknown[]): void;
    info(...data: unknown[]): void;
    debug(...data: unknown[]): void;
    warn(...data: unknown[]): void;
    error(...data: unknown[]): void;
  }
  var console: Console;
}

export {};
