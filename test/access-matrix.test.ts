/**
 * The access matrix of issue 4: every identity x every deployment state x every surface, each cell
 * asserting the exact status and error code.
 */
import { UnsecuredJWT } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { TokenService } from "../host/auth/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const STATES = ["unrestricted", "requireSignIn", "restricted", "unclaimed"] as const;
const SURFACES = ["query", "mutation", "endpoint"] as const;
type State = (typeof STATES)[number];
type Surface = (typeof SURFACES)[number];
type Who =
  | "no token"
  | "guest"
  | "account"
  | "approved account"
  | "developer owner"
  | "other developer"
  | "token of another deployment"
  | "expired token"
  | "tampered token"
  | "alg none token";
const WHO: Who[] = [
  "no token",
  "guest",
  "account",
  "approved account",
  "developer owner",
  "other developer",
  "token of another deployment",
  "expired token",
  "tampered token",
  "alg none token",
];

const tokens = new Map<string, string | undefined>();

beforeAll(async () => {
  host = await startTestHost();
  const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{
    id: string;
    token: string;
  }>();
  const other = (await host.admin("/v1/developers", "POST", { name: "other" })).json<{
    id: string;
    token: string;
  }>();
  const { fixtureCode } = await import("./helpers/host.js");
  const plain = await fixtureCode("access");
  const signIn = await fixtureCode("access-signin");
  for (const state of STATES) {
    const id = state.toLowerCase();
    const code = state === "requireSignIn" ? signIn : plain;
    const created = await host.admin("/v1/deploys", "POST", {
      id,
      code,
      ...(state === "unclaimed" ? {} : { owner: owner.id }),
    });
    expect(created.status, created.text()).toBe(201);
    if (state === "unclaimed")
      expect(created.json<{ claimToken: string; claimed: boolean }>()).toMatchObject({
        claimed: false,
        claimToken: expect.stringMatching(/^pct_/),
      });
  }
  await host.admin("/v1/deploys", "POST", { id: "elsewhere", code: plain });
  const secret = await host.deployments.db.records<{ hex: string }>("secrets").get("tokens");
  const signer = new TokenService(Buffer.from(secret!.hex, "hex"));
  for (const state of STATES) {
    const id = state.toLowerCase();
    const guest = (
      await sendRequest(`${host.deploymentUrl(id)}/__platform/auth/guest`, { method: "POST" })
    ).json<{ token: string; userId: string }>();
    const account = (
      await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: "member@example.com" })
    ).json<{ token: string }>();
    const approved = (
      await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: "approved@example.com" })
    ).json<{ token: string }>();
    const foreign = (
      await sendRequest(`${host.deploymentUrl("elsewhere")}/__platform/auth/guest`, { method: "POST" })
    ).json<{ token: string }>();
    const expired = await signer.issue(
      { deployment: id, userId: guest.userId, kind: "guest", session: "old", issuedAt: 1 },
      Date.now() - 3 * 3600 * 1000,
    );
    const [h, p, s] = approved.token.split(".");
    const payload = JSON.parse(Buffer.from(p as string, "base64url").toString()) as Record<string, unknown>;
    payload.email = "intruder@example.com";
    const none = new UnsecuredJWT({
      kind: "account",
      sid: "x",
      ses: Math.floor(Date.now() / 1000),
      email: "approved@example.com",
    })
      .setIssuer("platform")
      .setAudience(id)
      .setSubject("user:forged")
      .setExpirationTime("1h")
      .encode();
    const set = (who: Who, token: string | undefined) => tokens.set(`${state}/${who}`, token);
    set("no token", undefined);
    set("guest", guest.token);
    set("account", account.token);
    set("approved account", approved.token);
    set("developer owner", owner.token);
    set("other developer", other.token);
    set("token of another deployment", foreign.token);
    set("expired token", expired.token);
    set("tampered token", `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${s}`);
    set("alg none token", none);
  }
  // Restricted once its guest exists: a restricted deployment gives no guest tokens.
  const patched = await host.admin(
    "/v1/deploys/restricted",
    "PATCH",
    { restricted: true, approved: ["Approved@Example.com"] },
    owner.token,
  );
  expect(patched.status, patched.text()).toBe(200);
  const refused = await sendRequest(`${host.deploymentUrl("restricted")}/__platform/auth/guest`, {
    method: "POST",
  });
  expect([refused.status, refused.json<{ error: { code: string } }>().error.code]).toEqual([
    403,
    "forbidden",
  ]);
});
afterAll(() => host.dispose());

const BAD_TOKENS: Who[] = [
  "developer owner",
  "other developer",
  "token of another deployment",
  "expired token",
  "tampered token",
  "alg none token",
];

/** The expected outcome of one cell: 200, or [status, code]. */
function expected(who: Who, state: State, surface: Surface): 200 | [number, string] {
  if (BAD_TOKENS.includes(who)) return [401, "unauthorized"];
  if (state === "restricted") {
    if (who === "no token") return [401, "unauthorized"];
    return who === "approved account" ? 200 : [403, "forbidden"];
  }
  if (state === "requireSignIn" && surface !== "endpoint") {
    if (who === "no token") return [401, "unauthorized"];
    if (who === "guest") return [403, "forbidden"];
  }
  return 200;
}

async function attempt(who: Who, state: State, surface: Surface): Promise<HttpResponse> {
  const id = state.toLowerCase();
  const token = tokens.get(`${state}/${who}`);
  if (surface === "endpoint") {
    return sendRequest(`${host.deploymentUrl(id)}/e`, {
      headers: token ? { "x-platform-token": token } : {},
    });
  }
  return sendRequest(`${host.deploymentUrl(id)}/api/${surface}/${surface === "query" ? "q" : "m"}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: "{}",
  });
}

it("answers every cell of {identity} x {deployment state} x {surface} exactly", async () => {
  const failures: string[] = [];
  let cells = 0;
  for (const who of WHO) {
    for (const state of STATES) {
      for (const surface of SURFACES) {
        cells++;
        const want = expected(who, state, surface);
        const response = await attempt(who, state, surface);
        const got =
          response.status === 200
            ? 200
            : [response.status, response.json<{ error?: { code: string } }>().error?.code];
        if (JSON.stringify(got) !== JSON.stringify(want))
          failures.push(
            `${who} / ${state} / ${surface}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)} ${response.text()}`,
          );
      }
    }
  }
  expect(failures).toEqual([]);
  expect(cells).toBe(120);
});

it("claims an unclaimed deployment with its claim token, once", async () => {
  const dev = (await host.admin("/v1/developers", "POST", { name: "claimer" })).json<{
    id: string;
    token: string;
  }>();
  const created = (
    await host.admin("/v1/deploys", "POST", {
      id: "claimable",
      code: await (await import("./helpers/host.js")).fixtureCode("access"),
    })
  ).json<{ claimToken: string }>();
  expect(
    (await host.admin("/v1/deploys/claimable/claim", "POST", { claimToken: "pct_wrong" }, dev.token)).status,
  ).toBe(403);
  expect(
    (await host.admin("/v1/deploys/claimable/claim", "POST", { claimToken: created.claimToken })).status,
  ).toBe(403);
  const claimed = await host.admin(
    "/v1/deploys/claimable/claim",
    "POST",
    { claimToken: created.claimToken },
    dev.token,
  );
  expect(claimed.json()).toMatchObject({ owner: dev.id, claimed: true });
  expect(
    (await host.admin("/v1/deploys/claimable/claim", "POST", { claimToken: created.claimToken }, dev.token))
      .status,
  ).toBe(409);
  expect((await host.admin("/v1/me", "GET", undefined, dev.token)).json()).toMatchObject({
    kind: "developer",
    deploys: ["claimable"],
  });
  const stranger = (await host.admin("/v1/developers", "POST", { name: "stranger" })).json<{
    token: string;
  }>();
  expect(
    (await host.admin("/v1/deploys/claimable", "PATCH", { restricted: true }, stranger.token)).status,
  ).toBe(403);
  expect((await host.admin("/v1/developers", "POST", { name: "x" }, stranger.token)).status).toBe(403);
});

it("creates an operator's deployment only for a developer who exists, by POST and by PUT alike", async () => {
  const code = await (await import("./helpers/host.js")).fixtureCode("access");
  for (const [method, path] of [
    ["POST", "/v1/deploys"],
    ["PUT", "/v1/deploys/ownerless"],
  ] as const) {
    const unknown = await host.admin(path, method, { id: "ownerless", code, owner: "dev_nobody" });
    expect(unknown.status).toBe(400);
    expect(unknown.json()).toEqual({ error: { code: "bad_request", message: "No developer dev_nobody." } });
    const notAnId = await host.admin(path, method, { id: "ownerless", code, owner: { id: "dev_x" } });
    expect(notAnId.status).toBe(400);
    expect(notAnId.json<{ error: { code: string } }>().error.code).toBe("bad_request");
    expect((await host.admin("/v1/deploys/ownerless", "GET")).status).toBe(404);
  }
  const dev = (await host.admin("/v1/developers", "POST", { name: "owner by put" })).json<{ id: string }>();
  const made = await host.admin("/v1/deploys/ownerless", "PUT", { code, owner: dev.id });
  expect(made.status).toBe(201);
  expect(made.json()).toMatchObject({ owner: dev.id, claimed: true });
});
