/**
 * Account sessions minted through the operator API are stored records: a developer minting them
 * in a loop is limited; the operator is not. Real host, real HTTP.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let developer = "";
beforeAll(async () => {
  host = await startTestHost();
  const made = (await host.admin("/v1/developers", "POST", { name: "minter" })).json<{
    id: string;
    token: string;
  }>();
  developer = made.token;
  const deployed = await host.admin("/v1/deploys", "POST", {
    id: "minted",
    code: await fixtureCode("todo"),
    owner: made.id,
  });
  expect(deployed.status).toBe(201);
});
afterAll(() => host.dispose());

const mint = (token: string, n: number) =>
  sendRequest(`${host.url}/v1/deploys/minted/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ email: `user${n}@example.com` }),
  });

it("lets a developer mint a minute's sessions, then says when to retry; the operator mints on", async () => {
  const statuses: number[] = [];
  for (let n = 0; n <= LIMITS.sessionsMintedPerMinute; n++) statuses.push((await mint(developer, n)).status);
  expect(statuses.slice(0, LIMITS.sessionsMintedPerMinute).every((status) => status === 201)).toBe(true);
  const refused = await mint(developer, 1000);
  expect(refused.status).toBe(429);
  expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
  expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
  expect((await mint(host.adminToken, 1001)).status).toBe(201);
});
