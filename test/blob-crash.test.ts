/**
 * Crash test for the filesystem blob store: a writer is killed with SIGKILL at random moments;
 * after reopening, every blob that exists is complete, every acknowledged put is there, and no
 * temporary file is ever seen as a blob.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FsBlobStore } from "../host/storage/index.js";
import { blobContent } from "./helpers/blob-writer.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-blob-crash-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function writeUntilKilled(killAfterMs: number): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/blob-writer.ts", dir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let last = -1;
    let buffered = "";
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) last = Number(line.slice(4));
      timer ??= setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    });
    child.on("exit", () => {
      clearTimeout(timer);
      resolve(last);
    });
  });
}

it("never leaves a partial blob and never loses an acknowledged one", async () => {
  for (let round = 0; round < 4; round++) {
    const acked = await writeUntilKilled(30 + Math.floor(Math.random() * 200));
    const store = await FsBlobStore.open(dir);
    const keys = await store.list("crash/");
    for (let i = 0; i <= acked; i++) expect(keys).toContain(`crash/public/b${i}`);
    for (const key of keys) {
      const i = Number(key.slice("crash/public/b".length));
      expect((await store.get(key))?.equals(blobContent(i)), key).toBe(true);
    }
  }
}, 120_000);
