/**
 * `.env.platform.server` is read only as a regular file in the capsule folder: a symbolic link in
 * its place (`-> ~/.aws/credentials`), a FIFO or a folder is refused, saying what to do.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { envFileTrackedByGit, readServerEnv, SERVER_ENV_FILE } from "./env-file.js";

let root: string;
let app: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "platform-env-file-"));
  app = join(root, "app");
  await mkdir(app);
});
afterEach(() => rm(root, { recursive: true, force: true }));

it("reads the file, and nothing when there is none", async () => {
  expect(readServerEnv(app)).toEqual({});
  await writeFile(join(app, SERVER_ENV_FILE), "API_KEY=abc\n");
  expect(readServerEnv(app)).toEqual({ API_KEY: "abc" });
});

it("refuses a symbolic link, naming where it leads, and never reads what it leads to", async () => {
  const credentials = join(root, "home", ".aws", "credentials");
  await mkdir(join(root, "home", ".aws"), { recursive: true });
  await writeFile(credentials, "aws_secret_access_key=SECRET\n");
  await symlink(credentials, join(app, SERVER_ENV_FILE));
  expect(() => readServerEnv(app)).toThrow(
    expect.objectContaining({
      code: "bad_request",
      message: expect.stringContaining(
        `${SERVER_ENV_FILE} is a symbolic link (to ${credentials}); it is read only as a file of its own`,
      ),
    }),
  );
});

it("refuses a FIFO without reading it, and a folder", async () => {
  const fifo = join(app, SERVER_ENV_FILE);
  execFileSync("mkfifo", [fifo]);
  // A writer, so that a read of the FIFO would end (with what it wrote) rather than wait for one.
  const writer = spawn("sh", ["-c", 'printf "FROM_FIFO=1\\n" > "$0"', fifo], { stdio: "ignore" });
  const notRegular = expect.objectContaining({
    code: "bad_request",
    message: `${SERVER_ENV_FILE} is not a regular file; make it one, with the values in dotenv syntax.`,
  });
  try {
    expect(() => readServerEnv(app)).toThrow(notRegular);
  } finally {
    writer.kill();
  }
  await rm(join(app, SERVER_ENV_FILE));
  await mkdir(join(app, SERVER_ENV_FILE));
  expect(() => readServerEnv(app)).toThrow(notRegular);
});

it("asks git whether the file is tracked without running a command the project's git config names", async () => {
  // A cloned repository's folder posing as a bare repository: git reads its config, whose
  // core.fsmonitor is a command git runs for `ls-files` (deploy asked it before anything else).
  const marker = join(root, "ran");
  await mkdir(join(app, "objects", "info"), { recursive: true });
  await mkdir(join(app, "refs", "tags"), { recursive: true });
  await writeFile(join(app, "HEAD"), "ref: refs/heads/main\n");
  await writeFile(join(app, "objects", "info", "x"), "");
  await writeFile(join(app, "refs", "tags", "x"), "");
  await writeFile(
    join(app, "config"),
    `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch '${marker}'; false"\n`,
  );
  await writeFile(join(app, SERVER_ENV_FILE), "API_KEY=abc\n");
  expect(envFileTrackedByGit(app)).toBe(false);
  expect(existsSync(marker)).toBe(false);
});
