/**
 * A query's dispatch request as the host hands it to an isolate, for tests that drive an isolate
 * directly: handler `name` with `args`, anonymous, at a fixed time and seed.
 */
export const queryRequest = (name: string, args: unknown = {}) =>
  ({
    kind: "query",
    requestId: 0,
    identity: null,
    env: {},
    now: 1,
    seed: 1,
    name,
    argsJson: JSON.stringify(args),
  }) as const;
