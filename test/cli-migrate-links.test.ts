/**
 * `platform migrate` rewrites only the project's own files: a symbolic link under `server/` (to a
 * folder outside the project, or to `/`) is neither followed nor written through.
 */
import { cp, mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "platform-migrate-links-"));
});
afterEach(() => rm(root, { recursive: true, force: true }));

it("skips links under server/, saying so, and leaves what they lead to as it was", async () => {
  const project = join(root, "project");
  const outside = join(root, "victim", "server");
  await cp("fixtures/legacy", project, { recursive: true });
  await mkdir(outside, { recursive: true });
  await cp("fixtures/legacy/server/index.ts", join(outside, "index.ts"));
  const before = await readFile(join(outside, "index.ts"), "utf8");
  await symlink(outside, join(project, "server", "other"));
  await symlink(join(outside, "index.ts"), join(project, "server", "linked.ts"));

  const migrated = await runCliAsync(["migrate", project]);
  expect(migrated.status, migrated.stderr).toBe(0);
  expect(migrated.stderr).toContain("skipped server/other: a symbolic link (not followed)");
  expect(migrated.stderr).toContain("skipped server/linked.ts: a symbolic link (not followed)");
  // The project's own file was rewritten; the one outside it was not.
  expect(await readFile(join(project, "server", "index.ts"), "utf8")).not.toBe(before);
  expect(await readFile(join(outside, "index.ts"), "utf8")).toBe(before);
}, 60_000);

it("refuses a server/ folder that is itself a link", async () => {
  const project = join(root, "project");
  await mkdir(project);
  await cp("fixtures/legacy/server", join(root, "elsewhere"), { recursive: true });
  await symlink(join(root, "elsewhere"), join(project, "server"));
  const migrated = await runCliAsync(["migrate", project]);
  expect(migrated.status).toBe(1);
  expect(migrated.stderr).toContain("is a symbolic link; migrate rewrites only a project's own files.");
}, 60_000);
