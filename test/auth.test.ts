/**
 * Identity: guest and account tokens scoped to one deployment, expiry and renewal, tampering,
 * `alg: none`, requireIdentity / requireSignedIn / requireSignIn, and the guest upgrade (one
 * transaction with the hook; pending on failure; once under concurrency; plain strings untouched).
 */
import { UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { TokenService } from "../host/auth/index.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let dev: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  for (const id of ["ga", "gb"]) expect((await host.deployFixture(id, "guest-upgrade")).status).toBe(201);
  dev = await startTestHost({ devDeployment: "dev" });
  await dev.deployments.deploy("dev", { code: await fixtureCode("guest-upgrade") });
});
afterAll(async () => {
  await host.dispose();
  await dev.dispose();
});

type Reply = {
  status: number;
  body: Record<string, unknown> & { value?: unknown; error?: { code: string; message: string } };
};

async function post(
  target: TestHost,
  id: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<Reply> {
  const response = await sendRequest(`${target.deploymentUrl(id)}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    body: JSON.stringify(options.body ?? {}),
  });
  return { status: response.status, body: response.json() };
}

const call = (target: TestHost, id: string, kind: string, name: string, token?: string, args: unknown = {}) =>
  post(target, id, `/api/${kind}/${name}`, { body: args, ...(token ? { token } : {}) });

async function guest(target: TestHost, id: string): Promise<{ token: string; userId: string }> {
  const reply = await post(target, id, "/__platform/auth/guest");
  expect(reply.status).toBe(200);
  return reply.body as unknown as { token: string; userId: string };
}

async function account(id: string, email: string): Promise<{ token: string; userId: string }> {
  const response = await sendRequest(`${host.url}/v1/deploys/${id}/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ email }),
  });
  expect(response.status).toBe(201);
  return response.json();
}

async function tokenService(target: TestHost): Promise<TokenService> {
  const secret = await target.deployments.db.records<{ hex: string }>("secrets").get("tokens");
  return new TokenService(Buffer.from(secret!.hex, "hex"));
}

describe("tokens", () => {
  it("guests get a protected identity that handlers see", async () => {
    const g = await guest(host, "ga");
    expect(g.userId).toMatch(/^guest:[A-Za-z0-9_-]{16}$/);
    expect((await call(host, "ga", "query", "whoami", g.token)).body.value).toEqual({
      userId: g.userId,
      kind: "guest",
    });
    expect((await call(host, "ga", "query", "mustBeSomeone", g.token)).body.value).toBe(g.userId);
  });

  it("without a token, requireIdentity and requireSignedIn say unauthorized; getIdentity is null", async () => {
    expect((await call(host, "ga", "query", "whoami")).body.value).toBeNull();
    const someone = await call(host, "ga", "query", "mustBeSomeone");
    expect(someone).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
    expect((await call(host, "ga", "query", "mustBeAccount")).status).toBe(401);
  });

  it("guests are forbidden from requireSignedIn; accounts pass", async () => {
    const g = await guest(host, "ga");
    expect(await call(host, "ga", "query", "mustBeAccount", g.token)).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden" } },
    });
    const a = await account("ga", "Ann@Example.com");
    expect((await call(host, "ga", "query", "mustBeAccount", a.token)).body.value).toBe("ann@example.com");
  });

  it("refuses a token of another deployment, an expired, a tampered and an alg:none token", async () => {
    const g = await guest(host, "gb");
    const foreign = await call(host, "ga", "query", "whoami", g.token);
    expect(foreign).toMatchObject({
      status: 401,
      body: { error: { code: "unauthorized", message: "The token belongs to another deployment." } },
    });

    const tokens = await tokenService(host);
    const claims = { deployment: "ga", userId: g.userId, kind: "guest" as const, session: "s", issuedAt: 1 };
    const expired = (await tokens.issue(claims, Date.now() - 2 * 60 * 60 * 1000)).token;
    expect((await call(host, "ga", "query", "whoami", expired)).body.error?.message).toContain("expired");

    const fresh = await guest(host, "ga");
    const [header, payload, signature] = fresh.token.split(".");
    const forged = JSON.parse(Buffer.from(payload as string, "base64url").toString());
    forged.sub = "guest:someone-else";
    const tampered = `${header}.${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${signature}`;
    expect(await call(host, "ga", "query", "whoami", tampered)).toMatchObject({
      status: 401,
      body: { error: { code: "unauthorized" } },
    });
    // Signed with another secret (a dev server restarted without its data): the message says so.
    const elsewhere = await new TokenService(Buffer.alloc(32, 7)).issue(claims, Date.now());
    expect((await call(host, "ga", "query", "whoami", elsewhere.token)).body.error).toEqual({
      code: "unauthorized",
      message:
        "The token was not signed by this server: it comes from another server, or this one started without its data (platform dev keeps none unless given --data). Sign in again, or get a guest token at POST /__platform/auth/guest.",
    });

    const none = new UnsecuredJWT({
      kind: "account",
      sid: "x",
      ses: Math.floor(Date.now() / 1000),
      email: "root@example.com",
    })
      .setIssuer("platform")
      .setAudience("ga")
      .setSubject("user:root")
      .setExpirationTime("1h")
      .encode();
    expect(await call(host, "ga", "query", "whoami", none)).toMatchObject({
      status: 401,
      body: { error: { code: "unauthorized" } },
    });
    expect(await call(host, "ga", "query", "whoami", "not.a.jwt")).toMatchObject({ status: 401 });
    const malformed = await sendRequest(`${host.deploymentUrl("ga")}/api/query/whoami`, {
      method: "POST",
      headers: { authorization: "Basic abc" },
    });
    expect(malformed.status).toBe(401);
  });

  it("renews a token, also after it expired, for the same identity", async () => {
    const g = await guest(host, "ga");
    const renewed = await post(host, "ga", "/__platform/auth/renew", { token: g.token });
    expect(renewed.status).toBe(200);
    expect(renewed.body.userId).toBe(g.userId);
    expect((await call(host, "ga", "query", "whoami", renewed.body.token as string)).body.value).toEqual({
      userId: g.userId,
      kind: "guest",
    });
    expect((await post(host, "ga", "/__platform/auth/renew")).status).toBe(401);
  });

  it("named guests and dev-sign-in exist only in platform dev", async () => {
    expect((await post(host, "ga", "/__platform/auth/guest", { body: { name: "alice" } })).status).toBe(400);
    expect(
      (await post(host, "ga", "/__platform/auth/dev-sign-in", { body: { email: "a@b.co" } })).status,
    ).toBe(404);
    const named = await post(dev, "dev", "/__platform/auth/guest", { body: { name: "alice" } });
    expect(named.body.userId).toBe("guest:alice");
    const signedIn = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      body: { email: "dev@example.com" },
    });
    expect(signedIn.body).toMatchObject({ kind: "account", email: "dev@example.com" });
    expect((await post(dev, "dev", "/__platform/auth/dev-sign-in", { body: { email: "nope" } })).status).toBe(
      400,
    );
  });
});

describe("sign-out", () => {
  it("ends the session for good: the token, a copy and its renewal are refused, on HTTP and on a socket", async () => {
    const signedIn = await account("ga", "leaving@example.com");
    expect((await call(host, "ga", "query", "whoami", signedIn.token)).status).toBe(200);
    const socket = new WebSocket(
      `${host.deploymentUrl("ga").replace("http", "ws")}/api/sync?platform_token=${signedIn.token}`,
      { lookup: localhostLookup } as WebSocket.ClientOptions,
    );
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    const closed = new Promise<number>((resolve) => {
      socket.onclose = (event) => resolve(event.code);
    });
    const out = await post(host, "ga", "/__platform/auth/sign-out", { token: signedIn.token });
    expect(out).toEqual({ status: 200, body: { signedOut: true } });
    expect(await closed).toBe(4001);
    expect(await call(host, "ga", "query", "whoami", signedIn.token)).toMatchObject({
      status: 401,
      body: { error: { code: "unauthorized", message: "This session was signed out; sign in again." } },
    });
    // The account stays an account of the deployment (the dashboard runs functions as it).
    expect(await host.auth.accountExists("ga", "leaving@example.com")).toBe(true);
    // A session of an earlier deployment of this id (a sign-in that raced its deletion) is not.
    const sessions = host.deployments.db.records<Record<string, unknown>>("sessions");
    await sessions.put("ga/stale-session", {
      deployment: "ga",
      session: "stale-session",
      userId: "user:ghost",
      kind: "account",
      email: "ghost@example.com",
      incarnation: "an-earlier-one",
      createdAt: Date.now(),
    });
    expect(await host.auth.accountExists("ga", "ghost@example.com")).toBe(false);
    expect((await post(host, "ga", "/__platform/auth/renew", { token: signedIn.token })).status).toBe(401);
    // Signing out again changes nothing; without a token it says what to send.
    expect((await post(host, "ga", "/__platform/auth/sign-out", { token: signedIn.token })).status).toBe(200);
    expect((await post(host, "ga", "/__platform/auth/sign-out")).body.error).toEqual({
      code: "unauthorized",
      message: "Send the token to sign out as Authorization: Bearer <token>.",
    });
    // Another deployment's token signs nothing out here.
    const elsewhere = await account("gb", "leaving@example.com");
    expect((await post(host, "ga", "/__platform/auth/sign-out", { token: elsewhere.token })).status).toBe(
      401,
    );
    expect((await call(host, "gb", "query", "whoami", elsewhere.token)).status).toBe(200);
  });
});

describe("requireSignIn", () => {
  it("makes every query and mutation need an account", async () => {
    const { bundleCapsule } = await import("../cli/bundle.js");
    const { mkdtemp, mkdir, writeFile, rm } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(join(tmpdir(), "platform-signin-"));
    await mkdir(join(dir, "server"));
    await writeFile(
      join(dir, "server", "index.ts"),
      `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: { hi: async () => "hi" }, mutations: { go: async () => "went" }, auth: { requireSignIn: true } });\n`,
    );
    expect((await host.deployCode("locked", (await bundleCapsule(dir)).code)).status).toBe(201);
    await rm(dir, { recursive: true, force: true });
    for (const kind of ["query", "mutation"]) {
      const name = kind === "query" ? "hi" : "go";
      expect(await call(host, "locked", kind, name)).toMatchObject({
        status: 401,
        body: { error: { code: "unauthorized" } },
      });
      const g = await guest(host, "locked");
      expect(await call(host, "locked", kind, name, g.token)).toMatchObject({
        status: 403,
        body: { error: { code: "forbidden" } },
      });
      const a = await account("locked", "member@example.com");
      expect((await call(host, "locked", kind, name, a.token)).status).toBe(200);
    }
  });
});

describe("guest upgrade", () => {
  it("moves userId() fields across tables in one transaction with the hook; plain strings stay; the guest token is retired", async () => {
    const existing = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      body: { email: "owner@example.com" },
    });
    await call(dev, "dev", "mutation", "addNote", existing.body.token as string, { text: "account note" });
    const g = await post(dev, "dev", "/__platform/auth/guest", { body: { name: "visitor" } });
    const guestToken = g.body.token as string;
    await call(dev, "dev", "mutation", "addNote", guestToken, { text: "guest note 1" });
    await call(dev, "dev", "mutation", "addNote", guestToken, { text: "guest note 2" });
    await call(dev, "dev", "mutation", "setProfile", guestToken, { name: "V", reviewer: "guest:visitor" });

    const signedIn = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      token: guestToken,
      body: { email: "owner@example.com" },
    });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.upgradedFrom).toBe("guest:visitor");
    const accountId = signedIn.body.userId as string;
    expect(accountId).toBe(existing.body.userId);

    const everything = (await call(dev, "dev", "query", "everything")).body.value as Record<
      string,
      unknown[]
    >;
    expect(everything.notes).toEqual([
      [accountId, "account note"],
      [accountId, "guest note 1"],
      [accountId, "guest note 2"],
    ]);
    expect(everything.profiles).toEqual([[accountId, "V", accountId]]);
    expect(everything.mentions).toEqual([accountId, "guest:visitor", "guest:visitor"]);
    expect(everything.merges).toEqual([["guest:visitor", accountId]]);
    expect((await call(dev, "dev", "query", "myNotes", signedIn.body.token as string)).body.value).toEqual([
      "account note",
      "guest note 1",
      "guest note 2",
    ]);
    expect(await call(dev, "dev", "mutation", "addNote", guestToken, { text: "ghost" })).toMatchObject({
      status: 401,
    });
  });

  it("a failing hook moves nothing and leaves the upgrade pending; the next sign-in finishes it", async () => {
    const g = await post(dev, "dev", "/__platform/auth/guest", { body: { name: "pending" } });
    const guestToken = g.body.token as string;
    await call(dev, "dev", "mutation", "addNote", guestToken, { text: "keep me" });
    await call(dev, "dev", "mutation", "setFailHook", undefined, { fail: true });
    const failed = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      token: guestToken,
      body: { email: "pending@example.com" },
    });
    expect(failed.status).toBe(500);
    expect(failed.body.error).toEqual({
      code: "handler_error",
      message: "Guest upgrade failed: Uncaught Error: merge rules refused",
    });
    expect((await call(dev, "dev", "query", "myNotes", guestToken)).body.value).toEqual(["keep me"]);
    await call(dev, "dev", "mutation", "setFailHook", undefined, { fail: false });
    const retried = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      token: guestToken,
      body: { email: "pending@example.com" },
    });
    expect(retried.body.upgradedFrom).toBe("guest:pending");
    expect((await call(dev, "dev", "query", "myNotes", retried.body.token as string)).body.value).toEqual([
      "keep me",
    ]);
  });

  it("a guest owning more rows than one transaction may write is not upgraded: nothing moves, and the error says why", async () => {
    // The upgrade moves the guest's rows in one transaction: unbounded, one sign-in of a guest
    // that wrote a few hundred MB over many mutations held gigabytes of host memory.
    const big = await startTestHost({ devDeployment: "big" });
    try {
      await big.deployments.deploy("big", { code: await fixtureCode("guest-upgrade") });
      const g = await post(big, "big", "/__platform/auth/guest", { body: { name: "hoarder" } });
      const guestToken = g.body.token as string;
      for (const count of [4100, 4093])
        expect((await call(big, "big", "mutation", "addNotes", guestToken, { count })).status).toBe(200);
      const refused = await post(big, "big", "/__platform/auth/dev-sign-in", {
        token: guestToken,
        body: { email: "hoarder@example.com" },
      });
      expect(refused.status).toBe(429);
      expect(refused.body.error?.code).toBe("limit_exceeded");
      expect(refused.body.error?.message).toMatch(
        /^Guest upgrade failed: the guest's rows are more than one transaction may write \(Database rowsWritten limit exceeded \(8192\)\.\)\. Nothing moved/,
      );
      expect((await call(big, "big", "query", "ownsNotes", guestToken)).body.value).toBe(true);
      const asAccount = await post(big, "big", "/__platform/auth/dev-sign-in", {
        body: { email: "hoarder@example.com" },
      });
      const accountToken = asAccount.body.token as string;
      expect((await call(big, "big", "query", "ownsNotes", accountToken)).body.value).toBe(false);
    } finally {
      await big.dispose();
    }
  });

  it("two concurrent sign-ins of one guest upgrade it once", async () => {
    const g = await post(dev, "dev", "/__platform/auth/guest", { body: { name: "twice" } });
    const guestToken = g.body.token as string;
    await call(dev, "dev", "mutation", "addNote", guestToken, { text: "once" });
    const both = await Promise.all([
      post(dev, "dev", "/__platform/auth/dev-sign-in", {
        token: guestToken,
        body: { email: "twice@example.com" },
      }),
      post(dev, "dev", "/__platform/auth/dev-sign-in", {
        token: guestToken,
        body: { email: "twice@example.com" },
      }),
    ]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both.filter((r) => r.body.upgradedFrom === "guest:twice")).toHaveLength(1);
    const merges = ((await call(dev, "dev", "query", "everything")).body.value as { merges: string[][] })
      .merges;
    expect(merges.filter(([from]) => from === "guest:twice")).toHaveLength(1);
  });
});

describe("sign-out of a guest", () => {
  it("a signed-out guest's token moves nothing at the next sign-in", async () => {
    const g = await post(dev, "dev", "/__platform/auth/guest", { body: { name: "quitter" } });
    const guestToken = g.body.token as string;
    await call(dev, "dev", "mutation", "addNote", guestToken, { text: "left behind" });
    expect((await post(dev, "dev", "/__platform/auth/sign-out", { token: guestToken })).status).toBe(200);
    const signedIn = await post(dev, "dev", "/__platform/auth/dev-sign-in", {
      token: guestToken,
      body: { email: "quitter@example.com" },
    });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.upgradedFrom).toBeUndefined();
    expect((await call(dev, "dev", "query", "ownsNotes", signedIn.body.token as string)).body.value).toBe(
      false,
    );
  });
});

describe("string() to userId()", () => {
  it("does not hand rows written as plain strings to a visitor", async () => {
    const { bundleCapsule } = await import("../cli/bundle.js");
    const { mkdtemp, mkdir, writeFile, rm } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(join(tmpdir(), "platform-convert-"));
    await mkdir(join(dir, "server"));
    const source = (kind: string) =>
      `import { capsule, string, userId, table } from "platform/server";\nexport default capsule({ schema: { notes: table({ owner: ${kind}(), text: string() }) },\n  queries: { all: async (ctx) => (await ctx.db.notes.collect()).map((n) => [n.owner, n.text]) },\n  mutations: { shared: async (ctx) => { await ctx.db.notes.insert({ owner: "guest:shared", text: "old shared" }); }, mine: async (ctx) => { await ctx.db.notes.insert({ owner: ctx.auth.requireIdentity().userId, text: "new" }); } } });\n`;
    const convert = await startTestHost({ devDeployment: "dev" });
    try {
      await writeFile(join(dir, "server", "index.ts"), source("string"));
      await convert.deployments.deploy("dev", { code: (await bundleCapsule(dir)).code });
      await call(convert, "dev", "mutation", "shared");
      await writeFile(join(dir, "server", "index.ts"), source("userId"));
      await convert.deployments.deploy("dev", { code: (await bundleCapsule(dir)).code });
      const visitor = await post(convert, "dev", "/__platform/auth/guest", { body: { name: "shared" } });
      await call(convert, "dev", "mutation", "mine", visitor.body.token as string);
      const signedIn = await post(convert, "dev", "/__platform/auth/dev-sign-in", {
        token: visitor.body.token as string,
        body: { email: "v@example.com" },
      });
      expect(signedIn.body.upgradedFrom).toBe("guest:shared");
      expect((await call(convert, "dev", "query", "all")).body.value).toEqual([
        ["guest:shared", "old shared"],
        [signedIn.body.userId, "new"],
      ]);
    } finally {
      await convert.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
