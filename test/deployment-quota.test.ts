/**
 * A developer owns at most `deploymentsPerDeveloper` deployments (LIMITS.deploymentsPerDeveloper):
 * each holds a database of its own, so a developer's token creating deployments without end could
 * fill the disk every tenant's data is on. Every way a developer gains one counts (a create by
 * POST or PUT, streamed or not, a claim, an import into a new id), concurrent creates cannot pass
 * the bound together, a redeploy is never refused, and the operator creates past it. Real host
 * over HTTP, with a quota of 3.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { exportZip, importZip } from "./helpers/export-import.js";
import { heldBack } from "./helpers/held-back.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

const QUOTA = 3;

interface Developer {
  id: string;
  token: string;
}

let host: TestHost;
let code: string;

function developer(name: string): Promise<Developer> {
  return host.admin("/v1/developers", "POST", { name }).then((r) => r.json<Developer>());
}

/** A new developer `name` owning deployments `<name>-1` to `<name>-<count>` (the quota by default). */
async function developerOwning(name: string, count = QUOTA): Promise<Developer> {
  const who = await developer(name);
  for (let i = 1; i <= count; i++) expect((await create(who, `${name}-${i}`)).status).toBe(201);
  return who;
}

function create(who: Developer, id: string, method = "PUT") {
  return method === "POST"
    ? host.admin("/v1/deploys", "POST", { id, code }, who.token)
    : host.admin(`/v1/deploys/${id}`, "PUT", { code }, who.token);
}

function remove(who: Developer, id: string) {
  return host.admin(`/v1/deploys/${id}`, "DELETE", undefined, who.token);
}

async function owned(who: Developer): Promise<string[]> {
  return (await host.admin("/v1/me", "GET", undefined, who.token)).json<{ deploys: string[] }>().deploys;
}

/** Asserts `answer` is the quota refusal. */
function expectRefused(answer: { status: number; text(): string }): void {
  expect(answer.status, answer.text()).toBe(413);
  const { error } = JSON.parse(answer.text()) as { error: { code: string; message: string } };
  expect(error.code).toBe("quota_exceeded");
  expect(error.message).toMatch(/owns 3 deployments, the most one developer may own \(3\)\. Delete one/);
}

beforeAll(async () => {
  host = await startTestHost({ deploymentsPerDeveloper: QUOTA });
  code = await fixtureCode("counter");
}, 60_000);
afterAll(() => host.dispose());

describe("deployments per developer", () => {
  it("refuses a create past the quota, by POST and by PUT, and redeploys still go through", async () => {
    const ada = await developer("ada");
    for (const id of ["ada-1", "ada-2"]) expect((await create(ada, id)).status).toBe(201);
    expect((await create(ada, "ada-3", "POST")).status).toBe(201);
    expectRefused(await create(ada, "ada-4"));
    expectRefused(await create(ada, "ada-4", "POST"));
    expect((await host.admin("/v1/deploys/ada-4", "GET")).status).toBe(404);
    // Replacing a deployment adds none.
    expect((await create(ada, "ada-2")).status).toBe(200);
    // A deleted one frees its place.
    expect((await remove(ada, "ada-1")).status).toBe(204);
    expect((await create(ada, "ada-4")).status).toBe(201);
    expect((await owned(ada)).sort()).toEqual(["ada-2", "ada-3", "ada-4"]);
  }, 120_000);

  it("refuses a streamed create with the status, before any progress line", async () => {
    const bea = await developerOwning("bea");
    const streamed = await sendRequest(`${host.url}/v1/deploys/bea-4`, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${bea.token}`,
        "content-type": "application/json",
        accept: "application/x-ndjson",
      },
      body: JSON.stringify({ code }),
    });
    expectRefused(streamed);
  }, 120_000);

  it("lets only the quota's worth of concurrent creates through", async () => {
    const cy = await developer("cy");
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(cy, `cy-${i}`)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(QUOTA);
    expect(statuses.filter((status) => status === 413)).toHaveLength(12 - QUOTA);
    expect(await owned(cy)).toHaveLength(QUOTA);
  }, 120_000);

  it("counts a claim, and the operator creates past the quota for a developer", async () => {
    const dee = await developerOwning("dee");
    const forDee = await host.admin("/v1/deploys", "POST", { id: "dee-4", code, owner: dee.id });
    expect(forDee.status, forDee.text()).toBe(201);
    const unclaimed = await host.admin("/v1/deploys", "POST", { id: "dee-5", code });
    const { claimToken } = unclaimed.json<{ claimToken: string }>();
    const claim = () => host.admin("/v1/deploys/dee-5/claim", "POST", { claimToken }, dee.token);
    const refused = await claim();
    expect(refused.status, refused.text()).toBe(413);
    expect(refused.json<{ error: { message: string } }>().error.message).toContain("owns 4 deployments");
    for (const id of ["dee-1", "dee-2"]) expect((await remove(dee, id)).status).toBe(204);
    expect((await claim()).status).toBe(200);
    expect((await owned(dee)).sort()).toEqual(["dee-3", "dee-4", "dee-5"]);
  }, 120_000);

  it("counts an import into a new id, not one into a deployment the developer has", async () => {
    const eve = await developerOwning("eve");
    const archive = await exportZip(host, "eve-1", "", eve.token);
    expect(archive.status, archive.text()).toBe(200);
    expectRefused(await importZip(host, "eve-4", archive.body, "", eve.token));
    expect((await host.admin("/v1/deploys/eve-4", "GET")).status).toBe(404);
    const into = await importZip(host, "eve-2", archive.body, "?replace=1", eve.token);
    expect(into.status, into.text()).toBe(200);
    expect((await remove(eve, "eve-3")).status).toBe(204);
    const created = await importZip(host, "eve-4", archive.body, "", eve.token);
    expect(created.status, created.text()).toBe(200);
    expect((await owned(eve)).sort()).toEqual(["eve-1", "eve-2", "eve-4"]);
  }, 120_000);

  it("counts an import that creates its deployment because the one there was deleted during the upload", async () => {
    const fay = await developerOwning("fay");
    const archive = await exportZip(host, "fay-1", "", fay.token);
    // Into fay-1, which exists as the upload starts: no deployment is added, so nothing is counted yet.
    const send = await heldBack(
      "POST",
      `${host.url}/v1/deploys/fay-1/import?replace=1`,
      fay.token,
      archive.body,
      "application/zip",
    );
    expect((await remove(fay, "fay-1")).status).toBe(204);
    expect((await create(fay, "fay-4")).status).toBe(201);
    // Before, the import then created fay-1 again: four deployments, and as many more as imports.
    const answer = await send();
    expectRefused({ status: answer.status, text: () => answer.text });
    expect((await owned(fay)).sort()).toEqual(["fay-2", "fay-3", "fay-4"]);
  }, 120_000);

  it("answers a claim by its own rules first: a developer at the quota is told the claim is wrong, not the quota", async () => {
    const gil = await developerOwning("gil");
    const unclaimed = await host.admin("/v1/deploys", "POST", { id: "gil-4", code });
    const { claimToken } = unclaimed.json<{ claimToken: string }>();
    const claim = (id: string, token: string) =>
      host.admin(`/v1/deploys/${id}/claim`, "POST", { claimToken: token }, gil.token);
    expect((await claim("gil-4", "pct_wrong")).status).toBe(403);
    expect((await claim("nowhere", claimToken)).status).toBe(404);
    expect((await claim("gil-1", claimToken)).status).toBe(409);
    expectRefused(await claim("gil-4", claimToken));
  }, 120_000);

  it("has one developer's deployments read through one share of the database's connections", async () => {
    const hal = await developerOwning("hal", 2);
    expect(host.deployments.db.shareOf("hal-1")).toBe(hal.id);
    expect(host.deployments.db.shareOf("hal-2")).toBe(hal.id);
    // Unclaimed, each is its own, until a developer claims it.
    const unclaimed = await host.admin("/v1/deploys", "POST", { id: "hal-3", code });
    expect(host.deployments.db.shareOf("hal-3")).toBe("dev:hal-3");
    const { claimToken } = unclaimed.json<{ claimToken: string }>();
    expect((await host.admin("/v1/deploys/hal-3/claim", "POST", { claimToken }, hal.token)).status).toBe(200);
    expect(host.deployments.db.shareOf("hal-3")).toBe(hal.id);
  }, 120_000);
});

describe("deploys per developer and minute", () => {
  it("refuses a developer's deploys and settings changes past the limit, failed ones counted, with when to retry; the operator's go on", async () => {
    // One deploy a minute: the second within the minute is refused (a host of its own, started so).
    const limits = LIMITS as { deploysPerMinute: number };
    const before = limits.deploysPerMinute;
    limits.deploysPerMinute = 1;
    const strict = await startTestHost().finally(() => {
      limits.deploysPerMinute = before;
    });
    try {
      const ivy = (await strict.admin("/v1/developers", "POST", { name: "ivy" })).json<Developer>();
      // A failed deploy counts.
      const broken = await strict.admin("/v1/deploys/ivy-1", "PUT", { code: "not a bundle(" }, ivy.token);
      expect(broken.status).toBe(400);
      const refused = await strict.admin("/v1/deploys/ivy-1", "PUT", { code }, ivy.token);
      expect(refused.status, refused.text()).toBe(429);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      expect(refused.text()).toContain("a developer may start 1 a minute on this host, failed ones too");
      expect((await strict.admin("/v1/deploys", "POST", { id: "ivy-2", code }, ivy.token)).status).toBe(429);
      // Another developer, and the operator, are not held back by ivy's.
      const jo = (await strict.admin("/v1/developers", "POST", { name: "jo" })).json<Developer>();
      expect((await strict.admin("/v1/deploys/jo-1", "PUT", { code }, jo.token)).status).toBe(201);
      expect((await strict.admin("/v1/deploys/ivy-1", "PUT", { code })).status).toBe(201);
      // A settings change counts as a deploy: each is announced to every host, which runs the
      // deployment's live queries again (another host's flood of them broke the shares there).
      const patched = await strict.admin("/v1/deploys/jo-1", "PATCH", { restricted: true }, jo.token);
      expect(patched.status, patched.text()).toBe(429);
      expect(patched.text()).toContain("Too many deploys and settings changes");
      expect((await strict.admin("/v1/deploys/jo-1", "PATCH", { restricted: true })).status).toBe(200);
      // So does a claim, refused or not: each takes the deployment's lock, which its deploys and
      // imports wait for.
      expect((await strict.admin("/v1/deploys", "POST", { id: "free-1", code })).status).toBe(201);
      const claimed = await strict.admin(
        "/v1/deploys/free-1/claim",
        "POST",
        { claimToken: "pct_wrong" },
        jo.token,
      );
      expect(claimed.status, claimed.text()).toBe(429);
      expect(claimed.text()).toContain("Too many deploys and settings changes");
      // And so does an import: it compiles the bundle and takes the lock as a deploy does.
      const archive = (await exportZip(strict, "jo-1", "", jo.token)).body;
      const imported = await importZip(strict, "jo-1", archive, "?replace=1", jo.token);
      expect(imported.status, imported.text()).toBe(429);
      expect(imported.text()).toContain("(claims and imports too)");
      expect((await importZip(strict, "jo-1", archive, "?replace=1")).status).toBe(200);
    } finally {
      await strict.dispose();
    }
  }, 120_000);
});
