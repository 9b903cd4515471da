/**
 * The hosted flow without dead ends, through the CLI against a real host on loopback: the operator
 * creates a developer (`platform developers create` prints its token once), deploys an app nobody
 * owns yet (`platform deploy` prints the claim token once, with how to claim), the developer claims
 * it with that token and then deploys it as its owner.
 */

import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { runCliAsync } from "./helpers/cli.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

it("operator creates a developer and an unclaimed deployment; the developer claims and redeploys it", async () => {
  const operator = {
    PLATFORM_ADMIN_TOKEN: host.adminToken,
    PLATFORM_CONFIG_DIR: join(tmpdir(), "platform-hosted-flow-none"),
  };
  const created = await runCliAsync(
    ["developers", "create", "--host", host.url, "--email", "ada@example.com", "--name", "Ada"],
    operator,
  );
  expect(created.status, created.stderr).toBe(0);
  const token = /token: (pdt_\S+) \(shown once/.exec(created.stdout)?.[1];
  expect(token, created.stdout).toBeDefined();
  expect(created.stdout).toContain("(ada@example.com) created");
  // The line to sign in with leaves the token out of the command line (shell history, process list).
  expect(created.stdout).toMatch(
    new RegExp(`pasting the token when it asks: platform login --host ${host.url}\n?$`),
  );
  expect(created.stdout.split("\n").filter((line) => line.includes(token as string))).toHaveLength(1);

  const asJson = await runCliAsync(["developers", "create", "--host", host.url, "--json"], operator);
  expect(asJson.status, asJson.stderr).toBe(0);
  expect(JSON.parse(asJson.stdout)).toMatchObject({
    id: expect.stringMatching(/^dev_/),
    token: expect.stringMatching(/^pdt_/),
  });

  const withoutOperator = await runCliAsync(["developers", "create", "--host", host.url], {
    PLATFORM_ADMIN_TOKEN: "",
  });
  expect(withoutOperator.status).toBe(1);
  expect(withoutOperator.stderr).toContain(
    "error: unauthorized: Creating developers needs the operator token",
  );
  const asDeveloper = await runCliAsync([
    "developers",
    "create",
    "--host",
    host.url,
    "--token",
    token as string,
  ]);
  expect(asDeveloper.status).toBe(1);
  expect(asDeveloper.stderr).toMatch(/error: forbidden: /);

  const deployed = await runCliAsync(
    ["deploy", "fixtures/todo", "--host", host.url, "--name", "handed-over"],
    operator,
  );
  expect(deployed.status, deployed.stderr).toBe(0);
  const claimToken = /claim token for handed-over: (pct_\S+) \(shown once/.exec(deployed.stdout)?.[1];
  expect(claimToken, deployed.stdout).toBeDefined();
  expect(deployed.stdout).toContain(`${host.url}/v1/deploys/handed-over/claim`);

  const claimed = await sendRequest(`${host.url}/v1/deploys/handed-over/claim`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ claimToken }),
  });
  expect(claimed.status, claimed.text()).toBe(200);
  const redeployed = await runCliAsync(
    ["deploy", "fixtures/todo", "--host", host.url, "--name", "handed-over", "--token", token as string],
    { PLATFORM_CONFIG_DIR: join(tmpdir(), "platform-hosted-flow-none") },
  );
  expect(redeployed.status, redeployed.stderr).toBe(0);
  // A redeploy creates nothing: no claim token is shown again.
  expect(redeployed.stdout).not.toContain("claim token");
  const shown = await host.admin("/v1/deploys/handed-over", "GET", undefined, token);
  expect(shown.json()).toMatchObject({ id: "handed-over", claimed: true });
}, 120_000);
