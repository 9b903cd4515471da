/**
 * An import killed midway leaves nothing: a real child process runs an import on a host's data
 * folder and is killed (SIGKILL) while the objects' bytes are being written, or with every byte
 * written and the one batch not yet committed. The target is then exactly as it was (absent, or
 * its old data with `--replace`), and the host started on the folder removes the staged bytes.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { HostDatabase } from "../host/db/index.js";
import { FsBlobStore } from "../host/storage/index.js";
import { dumpDeployment, exportZip, importZip } from "./helpers/export-import.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

function importUntilMidway(dir: string, zip: string, id: string, stage: string, replace: boolean) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "test/helpers/import-crash.ts", dir, zip, id, stage, replace ? "replace" : ""],
      { stdio: ["ignore", "pipe", "inherit"] },
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

/** A deployment owned by a new developer, with rows and `files` uploaded objects. */
async function populate(host: TestHost, id: string, rows: number, files: number): Promise<void> {
  const owner = (await host.admin("/v1/developers", "POST", { name: `${id}-owner` })).json<{ id: string }>();
  const created = await host.admin("/v1/deploys", "POST", {
    id,
    code: await fixtureCode("transfer"),
    owner: owner.id,
  });
  expect(created.status).toBe(201);
  const ownerRow = (await host.call(id, "mutation", "addOwner", { name: id, account: "acct:x" })).json<{
    value: string;
  }>().value;
  await host.call(id, "mutation", "seed", { owner: ownerRow, from: 0, count: rows });
  const session = (await host.admin(`/v1/deploys/${id}/sessions`, "POST", { email: "u@example.com" })).json<{
    token: string;
  }>();
  for (let i = 0; i < files; i++) {
    const uploaded = await sendRequest(`${host.deploymentUrl(id)}/storage`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "text/plain" },
      body: `file ${i} of ${id}\n`,
    });
    expect(uploaded.status).toBe(201);
  }
}

/** What deployment `id` holds: database keys, object records, bytes, quota usage, import markers. */
async function stateOf(db: HostDatabase, dir: string, id: string) {
  const blobs = await FsBlobStore.open(join(dir, "blobs"));
  const usage = await db.records<{ bytes: number }>("storage-usage").list();
  return {
    dump: await dumpDeployment(db, id),
    record: (await db.records<{ artifact: string }>("deployments").get(id))?.artifact ?? null,
    blobs: (await blobs.list(`${id}/`)).sort(),
    usage,
  };
}

describe("an import killed midway", () => {
  it.each([
    { stage: "mid-objects", replace: false },
    { stage: "before-commit", replace: false },
    { stage: "mid-objects", replace: true },
    { stage: "before-commit", replace: true },
  ])(
    "at $stage (replace: $replace) leaves the target as it was",
    async ({ stage, replace }) => {
      const dir = await mkdtemp(join(tmpdir(), "platform-import-crash-"));
      try {
        const zip = join(dir, "source.zip");
        const first = await startTestHost({ data: dir });
        await populate(first, "source", 300, 4);
        if (replace) await populate(first, "target", 20, 1);
        const archive = (await exportZip(first, "source")).body;
        await writeFile(zip, archive);
        const before = await stateOf(first.database, dir, "target");
        await first.close();

        await importUntilMidway(dir, zip, "target", stage, replace);
        const midway = await HostDatabase.open(join(dir, "db"));
        try {
          // Killed with bytes staged and a marker naming them; the database itself is untouched.
          expect(await midway.records("deployment-imports").get("target")).toBeDefined();
          const state = await stateOf(midway, dir, "target");
          expect(state.blobs.length).toBeGreaterThan(before.blobs.length);
          expect({ ...state, blobs: [] }).toEqual({ ...before, blobs: [] });
        } finally {
          await midway.close();
        }

        const restarted = await startTestHost({ data: dir });
        try {
          expect(await stateOf(restarted.database, dir, "target")).toEqual(before);
          expect(await restarted.database.records("deployment-imports").list()).toEqual([]);
          // The id works as before: the same import now succeeds, exactly.
          const again = await importZip(restarted, "target", archive, replace ? "?replace=1" : "");
          expect(again.status, again.text()).toBe(200);
          expect(await dumpDeployment(restarted.database, "target")).toEqual(
            await dumpDeployment(restarted.database, "source"),
          );
        } finally {
          await restarted.close();
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});

/** When process `pid` started, as /proc says (clock ticks since boot). */
function startTicks(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] as string;
}

/** The pid of a node process that has run and exited (no process has it now). */
function pidOfEndedProcess(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", () => resolve(child.pid as number));
  });
}

describe("an archive received by a host that crashed", () => {
  it("is removed when a host starts on the folder, and one a running process receives is kept", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-upload-leftovers-"));
    const uploads = join(dir, "import-uploads");
    // A crashed host's upload (its process is gone), and one another running host receives.
    const ended = await pidOfEndedProcess();
    const other = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    try {
      await mkdir(join(uploads, `${ended}-crashed`), { recursive: true });
      await writeFile(join(uploads, `${ended}-crashed`, "archive.zip"), Buffer.alloc(1024 * 1024));
      const receiving = `${other.pid}.${startTicks(other.pid as number)}-receiving`;
      await mkdir(join(uploads, receiving), { recursive: true });
      await writeFile(join(uploads, receiving, "archive.zip"), "half an archive");
      // A container's host has the same pid after a restart: its start time tells them apart.
      await mkdir(join(uploads, `${process.pid}.1-before-restart`), { recursive: true });
      // Another process now has a crashed upload's pid (pids come again).
      await mkdir(join(uploads, `${other.pid}.1-reused-pid`), { recursive: true });
      const host = await startTestHost({ data: dir });
      try {
        expect(await readdir(uploads)).toEqual([receiving]);
      } finally {
        await host.dispose();
      }
    } finally {
      other.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
