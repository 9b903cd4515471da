/**
 * A deployment deleted and created again under its id by another developer, while another host
 * sharing the database (and its blob store) has not heard of it yet: that host still holds the
 * old record, which names the first developer as its owner and the old incarnation for its
 * sessions. Whatever storage work is asked of it for the id must not reach the new deployment's
 * files, which are another tenant's: not their listing, bytes or totals, nor their deletion.
 */
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import type { DeploymentRegistry } from "../host/deployments/registry.js";
import { deafTo } from "./helpers/deaf-host.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("A stale incarnation's storage on another host");
let a: TestHost;
let b: TestHost;
/** Host b's data folder, whose `blobs` is host a's: one blob store, as S3 would be. */
let bData: string;
let code: string;

const SECRET = "the victim's private notes";
const VICTIM = "victim@example.com";

beforeAll(async () => {
  if (!postgresInstalled) return;
  code = await sourceCode(`import { capsule } from "platform/server";
export default capsule({ schema: {}, queries: { label: async () => "app" } });
`);
  a = await startTestHost({ database: server.url, requestQuota: false });
  bData = await mkdtemp(join(tmpdir(), "platform-host-b-"));
  await symlink(join(a.dir, "blobs"), join(bData, "blobs"));
  b = await startTestHost({ database: server.url, requestQuota: false, data: bData });
}, 120_000);
afterAll(async () => {
  await b?.dispose();
  await a?.dispose();
  if (bData) await rm(bData, { recursive: true, force: true });
});

async function developer(name: string): Promise<{ id: string; token: string }> {
  return (await a.admin("/v1/developers", "POST", { name })).json<{ id: string; token: string }>();
}

async function sessionFor(host: TestHost, id: string, token: string): Promise<string> {
  const session = await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: VICTIM }, token);
  expect(session.status, session.text()).toBe(201);
  return session.json<{ token: string }>().token;
}

/** What the stale host b has to attack with, and the new deployment's private file. */
interface Replaced {
  /** The first (deleted) developer's token. */
  first: string;
  /** A session for the victim's email, minted on b by the first developer. */
  session: string;
  /** The new deployment's private file, `private/<object>`, uploaded by the victim on host a. */
  key: string;
}

/**
 * Deployment `id` created by one developer and managed through host b (its record cached there),
 * then deleted and created again by another developer through host a, whose user (the victim)
 * stores a private file, while b hears nothing of it.
 */
async function replacedUnheard(id: string): Promise<Replaced & { hear: () => void }> {
  const first = await developer(`${id}-first`);
  const created = await a.admin("/v1/deploys", "POST", { id, code, owner: first.id });
  expect(created.status, created.text()).toBe(201);
  expect((await b.admin(`/v1/deploys/${id}/storage`, "GET", undefined, first.token)).status).toBe(200);
  const hear = deafTo(b, id);
  try {
    expect((await a.admin(`/v1/deploys/${id}`, "DELETE")).status).toBe(204);
    const second = await developer(`${id}-second`);
    const again = await a.admin("/v1/deploys", "POST", { id, code, owner: second.id });
    expect(again.status, again.text()).toBe(201);
    const uploaded = await sendRequest(`${a.deploymentUrl(id)}/storage`, {
      method: "POST",
      headers: {
        "content-type": "text/plain",
        authorization: `Bearer ${await sessionFor(a, id, second.token)}`,
      },
      body: SECRET,
    });
    expect(uploaded.status, uploaded.text()).toBe(201);
    const session = await sessionFor(b, id, first.token);
    // Host b has heard nothing: it still holds the first deployment's record.
    expect(cachedOn(b, id)?.owner).toBe(first.id);
    return { hear, first: first.token, session, key: uploaded.json<{ key: string }>().key };
  } catch (error) {
    hear();
    throw error;
  }
}

/** The record host `host` holds of `id`, as cached, without reading the store. */
const cachedOn = (host: TestHost, id: string) =>
  (host.deployments as unknown as { registry: DeploymentRegistry }).registry.cached(id);

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Each storage route of host b, asked by the first developer (or their session) about the new file. */
const attacks: Array<[string, (id: string, replaced: Replaced) => Promise<HttpResponse>]> = [
  [
    "the dashboard's listing",
    (id, { first }) => b.admin(`/v1/deploys/${id}/storage`, "GET", undefined, first),
  ],
  [
    "the inspect route's listing",
    (id, { first }) => sendRequest(`${b.deploymentUrl(id)}/__platform/storage`, { headers: bearer(first) }),
  ],
  [
    "the owner's download",
    (id, { first, key }) => b.admin(`/v1/deploys/${id}/storage/${key}`, "GET", undefined, first),
  ],
  ["the dashboard's totals", (id, { first }) => b.admin(`/v1/deploys/${id}/totals`, "GET", undefined, first)],
  [
    "the owner's delete",
    (id, { first, key }) => b.admin(`/v1/me/deploys/${id}/storage/${key}`, "DELETE", undefined, first),
  ],
  [
    "the app's download",
    (id, { session, key }) =>
      sendRequest(`${b.deploymentUrl(id)}/storage/${key}`, { headers: bearer(session) }),
  ],
  [
    "the app's delete",
    (id, { session, key }) =>
      sendRequest(`${b.deploymentUrl(id)}/storage/${key}`, { method: "DELETE", headers: bearer(session) }),
  ],
];

describe.skipIf(!postgresInstalled)("a replaced deployment's files on a host that heard nothing", () => {
  it.each(attacks.map(([name, attack], index) => ({ name, attack, id: `files-${index}` })))(
    "refuses $name, and reads the record again",
    async ({ id, attack }) => {
      const { hear, ...replaced } = await replacedUnheard(id);
      try {
        const answer = await attack(id, replaced);
        expect(answer.status, answer.text()).toBe(404);
        expect(answer.json<{ error?: { code: string } }>().error?.code).toBe("not_found");
        expect(answer.text()).not.toContain(replaced.key.split("/")[1]);
        expect(answer.text()).not.toContain(VICTIM);
        expect(answer.text()).not.toContain(SECRET);
        // The victim's file is still there, whole.
        const kept = await a.admin(`/v1/deploys/${id}/storage/${replaced.key}`, "GET");
        expect([kept.status, kept.text()]).toEqual([200, SECRET]);
        // The refusal made b read the record again, though it still hears nothing else.
        await vi.waitFor(
          async () => expect(cachedOn(b, id)?.incarnation).toBe((await a.deployments.get(id))?.incarnation),
          { timeout: 10_000, interval: 50 },
        );
      } finally {
        hear();
      }
    },
    120_000,
  );
});
