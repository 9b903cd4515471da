/**
 * A query's or mutation's arguments are checked before the call runs, as JSON within the members
 * limit; large ones on the JSON thread in the caller's turn (LIMITS.jsonCheckedOffThreadBytes), so
 * a client sending 500 KB bodies of tiny members cannot hold the host's main thread. The call is
 * charged before the body is read, and a refused token costs its address a request too.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const ECHO = `import { capsule } from "platform/server";
export default capsule({
  schema: {},
  queries: { size: async (_ctx, args: { items: unknown[] }) => args.items.length },
});
`;

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost({ requestQuota: { perSecond: 1, burst: 20 } });
  expect((await host.deployCode("echo", await sourceCode(ECHO))).status).toBe(201);
});
afterAll(() => host.dispose());

const post = (body: string, headers: Record<string, string> = {}) =>
  sendRequest(`${host.deploymentUrl("echo")}/api/query/size`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

it("checks large arguments as small ones: valid ones run, malformed ones or too many objects are 400", async () => {
  const items = Array.from({ length: 20_000 }, (_, i) => i);
  const large = JSON.stringify({ items });
  expect(large.length).toBeGreaterThan(LIMITS.jsonCheckedOffThreadBytes);
  const ran = await post(large);
  expect([ran.status, ran.json()]).toEqual([200, { value: 20_000 }]);
  const broken = await post(`${large.slice(0, -2)},}`);
  expect([broken.status, broken.json<{ error: { code: string } }>().error.code]).toEqual([
    400,
    "bad_request",
  ]);
  const members = await post(
    JSON.stringify({ items: Array.from({ length: LIMITS.jsonMembers + 1 }, () => ({})) }),
  );
  expect([members.status, members.json<{ error: { code: string } }>().error.code]).toEqual([
    400,
    "bad_request",
  ]);
  expect((await post('{"items":[1,2]}')).json()).toEqual({ value: 2 });
});

it("counts only the brackets outside strings: arguments and a deploy whose text holds many more are taken", async () => {
  const brackets = "{[".repeat(LIMITS.jsonMembers);
  const text = await post(JSON.stringify({ items: [brackets] }));
  expect([text.status, text.json()]).toEqual([200, { value: 1 }]);
  // A bundle is one string of the deploy's body: a 9 MB one already held 53,690 brackets.
  const code = `${await sourceCode(ECHO)}\nvar braces = ${JSON.stringify(brackets)};\n`;
  const deployed = await host.deployCode("braces", code);
  expect(deployed.status, deployed.text()).toBe(201);
});

it("charges a refused token to its address: a flood of bad tokens ends in 429", async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++)
    statuses.push((await post("{}", { authorization: "Bearer not-a-token" })).status);
  expect(statuses[0]).toBe(401);
  expect(statuses).toContain(429);
});
