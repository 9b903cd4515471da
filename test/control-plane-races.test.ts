/**
 * Control-plane requests decide what their caller may do before their body arrives, and a client
 * may take minutes to send it. Meanwhile a deployment may be created, deleted, or created again
 * under the same id by another developer: the request must then act on nothing, never on the new
 * deployment. Real host over HTTP; each body is held back on a real socket until the race is set.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { heldBack } from "./helpers/held-back.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

interface Developer {
  id: string;
  token: string;
}

let host: TestHost;
let alice: Developer;
let bob: Developer;

/** {@link heldBack} of `body` as JSON to `path` on the host. */
function heldBackJson(method: string, path: string, token: string, body: unknown) {
  return heldBack(method, `${host.url}${path}`, token, Buffer.from(JSON.stringify(body)));
}

function developer(name: string): Promise<Developer> {
  return host.admin("/v1/developers", "POST", { name }).then((r) => r.json<Developer>());
}

async function createAs(who: Developer, id: string): Promise<void> {
  const created = await host.admin(
    `/v1/deploys/${id}`,
    "PUT",
    { code: await fixtureCode("access") },
    who.token,
  );
  expect(created.status, created.text()).toBe(201);
}

beforeAll(async () => {
  host = await startTestHost();
  alice = await developer("alice");
  bob = await developer("bob");
}, 60_000);
afterAll(() => host.dispose());

describe("control-plane requests racing a create or a delete", () => {
  it("a PUT that was to create an id never replaces the deployment someone else created meanwhile", async () => {
    const send = await heldBackJson("PUT", "/v1/deploys/shop", alice.token, {
      code: await fixtureCode("todo"),
    });
    await createAs(bob, "shop");
    const answer = await send();
    // 409 when the host checked before bob's create (the race); 403 if the machine held it until after.
    expect([409, 403], answer.text).toContain(answer.status);
    if (answer.status === 409) expect(answer.text).toContain("was created by someone else");
    const shop = await host.admin("/v1/deploys/shop", "GET", undefined, bob.token);
    expect(shop.json<{ owner: string }>().owner).toBe(bob.id);
    // Still bob's code: the todo fixture's `list` query is not there.
    expect((await host.call("shop", "query", "list")).status).toBe(404);
  }, 60_000);

  it("a redeploy of a deployment deleted meanwhile replaces nothing, whoever took the id", async () => {
    await createAs(alice, "cafe");
    const send = await heldBackJson("PUT", "/v1/deploys/cafe", alice.token, {
      code: await fixtureCode("todo"),
    });
    expect((await host.admin("/v1/deploys/cafe", "DELETE", undefined, alice.token)).status).toBe(204);
    await createAs(bob, "cafe");
    const answer = await send();
    expect([409, 403], answer.text).toContain(answer.status);
    if (answer.status === 409) expect(answer.text).toContain("was deleted while this deploy was on its way");
    expect((await host.call("cafe", "query", "list")).status).toBe(404);
  }, 60_000);

  it("a sign-in issued for a deleted deployment is refused, not issued for the new one", async () => {
    await createAs(alice, "bank");
    const send = await heldBackJson("POST", "/v1/deploys/bank/sessions", alice.token, {
      email: "ceo@victim.example",
    });
    expect((await host.admin("/v1/deploys/bank", "DELETE", undefined, alice.token)).status).toBe(204);
    await createAs(bob, "bank");
    const answer = await send();
    expect([404, 403], answer.text).toContain(answer.status);
    expect(answer.text).not.toContain("token");
  }, 60_000);

  it("a settings change for a deleted deployment changes nothing of the new one", async () => {
    await createAs(alice, "club");
    const send = await heldBackJson("PATCH", "/v1/deploys/club", alice.token, {
      restricted: true,
      approved: ["mallory@evil.example"],
    });
    expect((await host.admin("/v1/deploys/club", "DELETE", undefined, alice.token)).status).toBe(204);
    await createAs(bob, "club");
    const answer = await send();
    expect([404, 403], answer.text).toContain(answer.status);
    expect(answer.text).not.toContain(bob.id);
    const club = await host.admin("/v1/deploys/club", "GET", undefined, bob.token);
    expect(club.json()).toMatchObject({ owner: bob.id, restricted: false, approved: [] });
  }, 60_000);

  it("a data-browser insert into a deleted deployment writes nothing into the new one", async () => {
    await createAs(alice, "notes");
    const table = "visits"; // the access fixture's one table
    const send = await heldBackJson("POST", `/v1/deploys/notes/tables/${table}/rows`, alice.token, {
      who: "alice",
    });
    expect((await host.admin("/v1/deploys/notes", "DELETE", undefined, alice.token)).status).toBe(204);
    await createAs(bob, "notes");
    const answer = await send();
    expect([404, 403], answer.text).toContain(answer.status);
    const rows = await host.admin(`/v1/deploys/notes/tables/${table}/rows`, "GET", undefined, bob.token);
    expect(rows.json<{ page: unknown[] }>().page).toEqual([]);
  }, 60_000);

  it("a log stream followed before a delete ends with it", async () => {
    await createAs(alice, "logs");
    const ended = new Promise<string>((resolve, reject) => {
      const req = request(
        new URL(`${host.url}/v1/deploys/logs/logs?follow=1`),
        { headers: { authorization: `Bearer ${alice.token}` } },
        (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end();
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await host.admin("/v1/deploys/logs", "DELETE", undefined, alice.token)).status).toBe(204);
    await createAs(bob, "logs");
    await sendRequest(`${host.deploymentUrl("logs")}/api/query/whoami`, { method: "POST", body: "{}" });
    const text = await ended;
    expect(text).not.toContain("whoami");
  }, 60_000);
});
