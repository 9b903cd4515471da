/**
 * The CLI's config file holds login tokens: every write leaves it readable by the user alone (even
 * over a file that was not), replaces a symbolic link at its name instead of writing through it,
 * and is never half-written; a file that cannot be read says which file and what to do.
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { isPlatformError } from "../sdk/values/index.js";
import { readConfig, writeConfig } from "./config.js";

let root: string;
let dir: string;
let file: string;
const before = process.env.PLATFORM_CONFIG_DIR;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "platform-config-"));
  dir = join(root, "config");
  file = join(dir, "config.json");
  process.env.PLATFORM_CONFIG_DIR = dir;
});
afterEach(async () => {
  if (before === undefined) delete process.env.PLATFORM_CONFIG_DIR;
  else process.env.PLATFORM_CONFIG_DIR = before;
  await rm(root, { recursive: true, force: true });
});

const login = { logins: { "http://localhost:8080": { token: "dev_secret" } } };
const mode = async (path: string) => (await stat(path)).mode & 0o777;

it.skipIf(process.platform === "win32")(
  "leaves the file 0600 and its folder 0700 after writing a token over a 0644 file",
  async () => {
    await mkdir(dir, { mode: 0o755 });
    await writeFile(file, '{"logins":{}}\n', { mode: 0o644 });
    writeConfig(login);
    expect(await mode(file)).toBe(0o600);
    expect(await mode(dir)).toBe(0o700);
    expect(readConfig()).toEqual(login);
    expect(await readdir(dir)).toEqual(["config.json"]);
  },
);

it("replaces a symbolic link at config.json with a file, leaving what it pointed at untouched", async () => {
  const elsewhere = join(root, "elsewhere.json");
  await writeFile(elsewhere, '{"logins":{}}\n');
  await mkdir(dir);
  await symlink(elsewhere, file);
  writeConfig(login);
  expect((await lstat(file)).isFile()).toBe(true);
  expect(await readFile(elsewhere, "utf8")).toBe('{"logins":{}}\n');
  expect(readConfig()).toEqual(login);
});

it.each([
  ["empty", ""],
  ["cut short", '{"logins":{"http://localhost:8080":{"tok'],
  ["not an object", "null"],
])("refuses a config file that is %s, naming it and saying what to do", async (_, text) => {
  await mkdir(dir);
  await writeFile(file, text);
  let error: unknown;
  try {
    readConfig();
  } catch (caught) {
    error = caught;
  }
  expect(isPlatformError(error) && error.code).toBe("bad_request");
  expect((error as Error).message).toBe(
    `The CLI's config file ${file} is not a JSON object (damaged or cut short). Fix it, or delete it and run platform login again.`,
  );
});
