/**
 * Deleting a deployment over real HTTP on a real classic-level store: after `DELETE /v1/deploys/<id>`
 * and a new deployment under the same id by another developer, nothing of the old one remains
 * (rows, indexes, counts, object records, bytes, the old owner's storage usage, sessions) and the
 * old tokens are refused; a crash midway is finished by the restarted host; tokens issued before
 * incarnations existed keep working on the deployments they belong to.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type HttpResponse, localhostLookup, sendRequest } from "../cli/http.js";
import { TokenService } from "../host/auth/index.js";
import { incarnationKey } from "../host/db/incarnation.js";
import { collect, HostDatabase } from "../host/db/index.js";
import { deploymentPrefixes } from "../host/db/keys.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { SYNC_CLOSE } from "../sdk/protocol/index.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const ID = "reused";
const QUOTA = 100_000;
const FILE = 40_000;

interface Developer {
  id: string;
  token: string;
}

type ErrorBody = { error: { code: string; message: string } };
const code = (response: HttpResponse) => [response.status, response.json<ErrorBody>().error?.code];

function developer(host: TestHost, name: string): Promise<Developer> {
  return host.admin("/v1/developers", "POST", { name }).then((r) => r.json<Developer>());
}

async function create(host: TestHost, id: string, owner: Developer): Promise<void> {
  const created = await host.admin("/v1/deploys", "POST", {
    id,
    code: await fixtureCode("access"),
    owner: owner.id,
  });
  expect(created.status, created.text()).toBe(201);
}

function upload(host: TestHost, id: string, token: string, isPublic: boolean): Promise<HttpResponse> {
  return sendRequest(`${host.deploymentUrl(id)}/storage${isPublic ? "?public=true" : ""}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body: Buffer.alloc(FILE, isPublic ? 1 : 2),
  });
}

function call(host: TestHost, id: string, kind: "query" | "mutation", name: string, token: string) {
  return sendRequest(`${host.deploymentUrl(id)}/api/${kind}/${name}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: "{}",
  });
}

function renew(host: TestHost, id: string, token: string) {
  return sendRequest(`${host.deploymentUrl(id)}/__platform/auth/renew`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: "{}",
  });
}

/** Keys the store still holds for deployment `id`: its rows, indexes, counts, metadata and host records. */
async function keysOf(db: HostDatabase, id: string): Promise<string[]> {
  const found: string[] = [];
  for (const prefix of deploymentPrefixes(id)) {
    const end = Buffer.from(prefix);
    end[end.length - 1] = (end[end.length - 1] as number) + 1;
    for (const [key] of await collect(db.store.iterate({ gte: prefix, lt: end })))
      found.push(key.toString("hex"));
  }
  for (const namespace of [
    "objects",
    "objects-by-time",
    "sessions",
    "email-codes",
    "client-files",
    "client-manifests",
  ]) {
    const records = await db.records<unknown>(namespace).listPrefix(`${id}/`);
    if (records.length > 0) found.push(`${namespace}: ${records.length}`);
  }
  for (const namespace of ["storage-totals", "deployment-removals"])
    if (await db.records<unknown>(namespace).get(id)) found.push(`${namespace}/${id}`);
  return found;
}

async function blobsOf(dir: string, id: string): Promise<string[]> {
  return readdir(join(dir, "blobs", id), { recursive: true }).catch(() => []);
}

/** What the old deployment left: tokens and object keys to try against the new one. */
interface Leftovers {
  account: string;
  guest: string;
  keys: string[];
}

/** Creates `ID` for `owner` with rows, a public and a private object and both kinds of token. */
async function populate(host: TestHost, owner: Developer): Promise<Leftovers> {
  await create(host, ID, owner);
  // A web client too: its files and manifest are removed with the rest.
  const client = [{ path: "index.html", data: Buffer.from("<p>old app</p>").toString("base64") }];
  const withClient = await host.admin(`/v1/deploys/${ID}`, "PUT", {
    code: await fixtureCode("access"),
    client,
  });
  expect(withClient.status, withClient.text()).toBe(200);
  const account = (
    await host.admin(`/v1/deploys/${ID}/sessions`, "POST", { email: "uploader@example.com" })
  ).json<{ token: string }>().token;
  const guest = (
    await sendRequest(`${host.deploymentUrl(ID)}/__platform/auth/guest`, { method: "POST" })
  ).json<{ token: string }>().token;
  expect((await call(host, ID, "mutation", "m", account)).status).toBe(200);
  expect((await call(host, ID, "mutation", "m", guest)).status).toBe(200);
  const keys: string[] = [];
  for (const isPublic of [true, false]) {
    const stored = await upload(host, ID, account, isPublic);
    expect(stored.status, stored.text()).toBe(201);
    keys.push(stored.json<{ key: string }>().key);
  }
  // The old owner's storage is full now: one more file is over the quota.
  expect(code(await upload(host, ID, account, true))).toEqual([413, "quota_exceeded"]);
  return { account, guest, keys };
}

/** Recreates `ID` for `next` and checks that nothing of the old deployment is served or counted. */
async function expectNothingLeft(host: TestHost, old: Developer, next: Developer, left: Leftovers) {
  await create(host, ID, next);
  const member = (
    await host.admin(`/v1/deploys/${ID}/sessions`, "POST", { email: "uploader@example.com" }, next.token)
  ).json<{ token: string }>().token;
  for (const key of left.keys) {
    const withOldToken = await sendRequest(
      `${host.deploymentUrl(ID)}/storage/${key}?platform_token=${left.account}`,
    );
    expect(withOldToken.status, `${key}: ${withOldToken.text()}`).not.toBe(200);
    const asNewMember = await sendRequest(`${host.deploymentUrl(ID)}/storage/${key}`, {
      headers: { authorization: `Bearer ${member}` },
    });
    expect(code(asNewMember)).toEqual([404, "not_found"]);
  }
  const listing = await sendRequest(`${host.deploymentUrl(ID)}/__platform/storage`, {
    headers: { authorization: `Bearer ${next.token}` },
  });
  expect(listing.status, listing.text()).toBe(200);
  expect(listing.text()).not.toContain("uploader@example.com");
  expect(listing.json<{ objects: unknown[] }>().objects).toEqual([]);
  for (const token of [left.account, left.guest]) {
    for (const refused of [
      await call(host, ID, "query", "q", token),
      await call(host, ID, "mutation", "m", token),
      await renew(host, ID, token),
    ]) {
      expect(code(refused)).toEqual([401, "unauthorized"]);
      expect(refused.json<ErrorBody>().error.message).toMatch(/sign in again/);
    }
  }
  // The old owner's storage was freed: a file as large as before fits in another deployment.
  await create(host, `${ID}-again`, old);
  const account = (
    await host.admin(`/v1/deploys/${ID}-again/sessions`, "POST", { email: "uploader@example.com" })
  ).json<{ token: string }>().token;
  const stored = await upload(host, `${ID}-again`, account, false);
  expect(stored.status, stored.text()).toBe(201);
  // The new deployment starts empty and works for its own users.
  const fresh = (
    await sendRequest(`${host.deploymentUrl(ID)}/__platform/auth/guest`, { method: "POST" })
  ).json<{ token: string }>().token;
  expect((await call(host, ID, "query", "q", fresh)).json<{ value: string }>().value).toBe("guest");
}

describe("deleting a deployment", () => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startTestHost({ storageLimits: { perDeveloper: QUOTA } });
  });
  afterAll(() => host.dispose());

  it("leaves nothing behind for a new deployment with the same id by another developer", async () => {
    const old = await developer(host, "old");
    const next = await developer(host, "next");
    const left = await populate(host, old);
    const oldRecord = await host.deployments.require(ID);
    expect(await keysOf(host.database, ID)).not.toEqual([]);
    expect(await blobsOf(host.dir, ID)).not.toEqual([]);
    const deleted = await host.admin(`/v1/deploys/${ID}`, "DELETE", undefined, old.token);
    expect(deleted.status, deleted.text()).toBe(204);
    expect(await keysOf(host.database, ID)).toEqual([]);
    expect((await blobsOf(host.dir, ID)).filter((name) => name.length > 10)).toEqual([]);
    expect(code(await host.admin(`/v1/deploys/${ID}`, "DELETE", undefined, old.token))).toEqual([
      404,
      "not_found",
    ]);
    await expectNothingLeft(host, old, next, left);
    // A delete authorised on the old deployment does not reach the new one.
    await expect(host.deployments.remove(oldRecord)).rejects.toMatchObject({ code: "conflict" });
    expect(code(await host.admin(`/v1/deploys/${ID}`, "DELETE", undefined, old.token))[0]).toBe(403);
    expect((await host.admin(`/v1/deploys/${ID}`, "GET", undefined, next.token)).status).toBe(200);
  });
});

/** Opens `GET /api/sync` of deployment `id`; resolves with the socket and its close. */
function openSync(host: TestHost, id: string, token?: string) {
  const query = token ? `?platform_token=${encodeURIComponent(token)}` : "";
  const ws = new WebSocket(`${host.deploymentUrl(id).replace("http", "ws")}/api/sync${query}`, {
    lookup: localhostLookup,
  } as WebSocket.ClientOptions);
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (closeCode, reason) => resolve({ code: closeCode, reason: String(reason) })),
  );
  return new Promise<{ ws: WebSocket; closed: typeof closed }>((resolve, reject) => {
    ws.once("open", () => resolve({ ws, closed }));
    ws.once("error", reject);
  });
}

describe("open connections of a deleted deployment", () => {
  it("are closed with the deployment-gone code, with and without a token", async () => {
    const host = await startTestHost();
    try {
      const owner = await developer(host, "owner");
      await create(host, "socketed", owner);
      const guest = (
        await sendRequest(`${host.deploymentUrl("socketed")}/__platform/auth/guest`, { method: "POST" })
      ).json<{ token: string }>().token;
      const sockets = [await openSync(host, "socketed"), await openSync(host, "socketed", guest)];
      const deleted = await host.admin("/v1/deploys/socketed", "DELETE", undefined, owner.token);
      expect(deleted.status, deleted.text()).toBe(204);
      for (const socket of sockets)
        expect(await socket.closed).toEqual({
          code: SYNC_CLOSE.deploymentGone,
          reason: "deployment deleted",
        });
      await expect(openSync(host, "socketed")).rejects.toThrow(/404/);
    } finally {
      await host.dispose();
    }
  });
});

describe.skipIf(postgresBinDir() === undefined)("on PostgreSQL, shared by two hosts", () => {
  let server: LocalPostgres;
  beforeAll(async () => {
    server = await startLocalPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("a deletion on one host closes the other's sockets and leaves nothing for a new deployment made there", async () => {
    const limits = { perDeveloper: QUOTA };
    const a = await startTestHost({ database: server.url, storageLimits: limits });
    const b = await startTestHost({ database: server.url, storageLimits: limits });
    try {
      const old = await developer(a, "old");
      const next = await developer(a, "next");
      const left = await populate(a, old);
      // Host b serves (and caches) the old deployment before it is deleted on host a.
      expect(code(await call(b, ID, "query", "q", left.guest))[0]).toBe(200);
      const onOtherHost = await openSync(b, ID, left.guest);
      const deleted = await a.admin(`/v1/deploys/${ID}`, "DELETE", undefined, old.token);
      expect(deleted.status, deleted.text()).toBe(204);
      expect(await onOtherHost.closed).toEqual({
        code: SYNC_CLOSE.deploymentGone,
        reason: "deployment deleted",
      });
      expect(await keysOf(b.database, ID)).toEqual([]);
      await expectNothingLeft(b, old, next, left);
      for (const token of [left.account, left.guest])
        expect(code(await call(a, ID, "query", "q", token))).toEqual([401, "unauthorized"]);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  }, 60_000);
});

describe("tokens of deployments created before incarnations", () => {
  it("keep working; a token without an incarnation is refused by a deployment that has one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-delete-legacy-"));
    try {
      const first = await startTestHost({ data: dir });
      const owner = await developer(first, "owner");
      await create(first, "legacy", owner);
      await create(first, "current", owner);
      await first.close();
      // The record as a host before incarnations stored it, and a token it issued (no `inc`).
      const db = await HostDatabase.open(join(dir, "db"));
      const records = db.records<Record<string, unknown>>("deployments");
      const record = (await records.get("legacy")) as Record<string, unknown>;
      expect(record.incarnation).toEqual(expect.any(String));
      delete record.incarnation;
      await records.put("legacy", record);
      // Nor was its data marked as an incarnation's (host/db/incarnation.ts).
      await db.store.batch([{ type: "del", key: incarnationKey("legacy") }]);
      const secret = await db.records<{ hex: string }>("secrets").get("tokens");
      const signer = new TokenService(Buffer.from(secret?.hex as string, "hex"));
      const tokens: Record<string, string> = {};
      for (const id of ["legacy", "current"]) {
        await db.records<unknown>("sessions").put(`${id}/before`, {
          deployment: id,
          session: "before",
          userId: "guest:before",
          kind: "guest",
          createdAt: Date.now(),
        });
        const claims = { deployment: id, userId: "guest:before", kind: "guest" as const, session: "before" };
        tokens[id] = (
          await signer.issue(Object.assign(claims, { issuedAt: Math.floor(Date.now() / 1000) }))
        ).token;
      }
      await db.close();
      const host = await startTestHost({ data: dir });
      try {
        const before = tokens.legacy as string;
        expect((await call(host, "legacy", "query", "q", before)).json<{ value: string }>().value).toBe(
          "guest",
        );
        const renewed = await renew(host, "legacy", before);
        expect(renewed.status, renewed.text()).toBe(200);
        expect(
          (await call(host, "legacy", "query", "q", renewed.json<{ token: string }>().token)).json(),
        ).toEqual({ value: "guest" });
        const guest = (
          await sendRequest(`${host.deploymentUrl("legacy")}/__platform/auth/guest`, { method: "POST" })
        ).json<{ token: string }>().token;
        expect((await call(host, "legacy", "query", "q", guest)).json<{ value: string }>().value).toBe(
          "guest",
        );
        const refused = await call(host, "current", "query", "q", tokens.current as string);
        expect(code(refused)).toEqual([401, "unauthorized"]);
        expect(refused.json<ErrorBody>().error.message).toMatch(/sign in again/);
      } finally {
        await host.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

function deleteUntilMidway(dir: string, id: string, stage: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "test/helpers/removal-crash.ts", dir, id, stage],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("midway")) child.kill("SIGKILL");
    });
    child.on("exit", (code, signal) =>
      signal === "SIGKILL" ? resolve() : reject(new Error(`child exited with ${code}: ${output}`)),
    );
  });
}

/** Where the child stops a removal, and what must remain of the deployment then. */
const CRASH_POINTS: Array<{ stage: string; remains: (keys: string[]) => void }> = [
  {
    stage: "before-rows",
    remains: (keys) => {
      expect(keys.filter((key) => !key.includes(":") && !key.includes("/")).length).toBeGreaterThan(0);
      expect(keys).toEqual(expect.arrayContaining(["client-files: 1", "client-manifests: 1"]));
    },
  },
  { stage: "after-rows", remains: (keys) => expect(keys).toEqual(expect.arrayContaining(["objects: 2"])) },
  {
    stage: "after-objects",
    remains: (keys) => {
      expect(keys).not.toContain("objects: 2");
      expect(keys.some((key) => key.startsWith("sessions"))).toBe(true);
    },
  },
  { stage: "after-purges", remains: (keys) => expect(keys).toEqual([`deployment-removals/${ID}`]) },
];

describe("a crash midway through a deletion", () => {
  it.each(CRASH_POINTS)(
    "at $stage is finished by the restarted host before the id is used again",
    async ({ stage, remains }) => {
      const dir = await mkdtemp(join(tmpdir(), "platform-delete-crash-"));
      try {
        const first = await startTestHost({ data: dir, storageLimits: { perDeveloper: QUOTA } });
        const old = await developer(first, "old");
        const next = await developer(first, "next");
        const left = await populate(first, old);
        await first.close();
        await deleteUntilMidway(dir, ID, stage);
        // Killed midway: the deployment is hidden and marked as being removed; some of it remains.
        const midway = await HostDatabase.open(join(dir, "db"));
        const remaining = await keysOf(midway, ID);
        await midway.close();
        expect(remaining).toContain(`deployment-removals/${ID}`);
        remains(remaining);
        const restarted = await startTestHost({ data: dir, storageLimits: { perDeveloper: QUOTA } });
        try {
          expect(await keysOf(restarted.database, ID)).toEqual([]);
          await expectNothingLeft(restarted, old, next, left);
        } finally {
          await restarted.close();
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
