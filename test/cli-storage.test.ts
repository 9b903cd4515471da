/**
 * `platform storage` and `platform auth as` as subprocesses against a real dev server (and a hosted
 * host): every command, human and --json output, and the failure paths with their exit codes.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { CLI, type CliProcess, freePort, runCli, runCliAsync, startDev } from "./helpers/cli.js";
import { fixtureCode, startTestHost } from "./helpers/host.js";

let dir: string;
let dev: CliProcess;
let port: number;
let env: Record<string, string>;
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(300, 9),
]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-storage-"));
  env = { PLATFORM_CONFIG_DIR: join(dir, "config") };
  ({ dev, port } = await startDev("fixtures/todo"));
  await writeFile(join(dir, "avatar.png"), PNG);
  await writeFile(join(dir, "page.html"), "<html><body>hi</body></html>");
  await writeFile(join(dir, "big.bin"), Buffer.alloc(5 * 1024 * 1024 + 1));
});
afterAll(async () => {
  await dev.stop();
  await rm(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCli([...args, "--port", String(port)], env);

describe("platform storage against platform dev", () => {
  it("puts, lists, gets and deletes, as the local guest set by auth as", async () => {
    const as = runCli(["auth", "as", "alice"], env);
    expect([as.status, as.stdout.trim()]).toEqual([0, "local commands now act as guest:alice"]);
    const put = cli("storage", "put", join(dir, "avatar.png"), "--public");
    expect(put.status, put.stderr).toBe(0);
    expect(put.stdout).toMatch(
      /^uploaded avatar\.png \(308 B, image\/png\)\nkey: public\/[A-Za-z0-9_-]{22}\nurl: http:\/\/localhost:\d+\/storage\/public\//,
    );
    const key = /key: (\S+)/.exec(put.stdout)?.[1] as string;

    const json = cli("storage", "put", join(dir, "avatar.png"), "--json", "--content-type", "image/x-custom");
    const record = JSON.parse(json.stdout) as { key: string; size: number; contentType: string };
    expect(record).toMatchObject({ size: 308, contentType: "image/x-custom" });
    expect(record.key).toMatch(/^private\//);

    const list = cli("storage", "list");
    expect(list.status).toBe(0);
    expect(list.stdout).toContain(key);
    expect(list.stdout).toContain("guest:alice");
    expect(list.stdout).toContain("2 files, 616 B in total");
    const listJson = JSON.parse(cli("storage", "list", "--json", "--prefix", "private/").stdout) as {
      objects: Array<{ key: string }>;
      prefix: string;
      olderNotChecked: boolean;
    };
    expect(listJson.objects.map((o) => o.key)).toEqual([record.key]);
    expect(listJson.olderNotChecked).toBe(false);

    const out = join(dir, "copy.png");
    const get = cli("storage", "get", key, "--out", out, "--json");
    expect(JSON.parse(get.stdout)).toEqual({ key, out, size: 308, contentType: "image/png" });
    expect((await readFile(out)).equals(PNG)).toBe(true);
    const raw = cli("storage", "get", key);
    expect(Buffer.from(raw.stdout, "latin1").length).toBeGreaterThan(0);

    const del = cli("storage", "delete", key, "--json");
    expect(JSON.parse(del.stdout)).toEqual({ key, deleted: true });
    const gone = cli("storage", "get", key, "--out", out);
    expect([gone.status, gone.stderr.trim()]).toEqual([1, "error: not_found: No such object."]);
  });

  it("fails clearly: missing file, too large, blocked type, bad flags, --json without --out", () => {
    const missing = cli("storage", "put", join(dir, "nope.png"));
    expect([missing.status, missing.stderr.trim()]).toEqual([
      1,
      `error: not_found: No such file: ${join(dir, "nope.png")}.`,
    ]);
    const big = cli("storage", "put", join(dir, "big.bin"));
    expect(big.status).toBe(1);
    expect(big.stderr).toContain("uploads are limited to 5 MiB. Nothing was sent.");
    const blocked = cli("storage", "put", join(dir, "page.html"));
    expect(blocked.status).toBe(1);
    expect(blocked.stderr).toContain("text/html");
    expect(cli("storage", "put").status).toBe(2);
    expect(cli("storage", "list", "--no-such-flag").status).toBe(2);
    const needsOut = cli("storage", "get", "public/AAAAAAAAAAAAAAAAAAAAAA", "--json");
    expect([needsOut.status, needsOut.stderr.trim()]).toEqual([
      2,
      "error: --json needs --out <file>: the bytes cannot be printed as JSON.",
    ]);
    expect(runCli(["auth", "as", "Bad Name"], env).status).toBe(2);
    expect(cli("storage", "list").stderr).not.toMatch(/\n\s+at /);
    // A stored file is anyone's upload: never written to a terminal, whose escape codes it may hold.
    const inTerminal = spawnSync(
      "script",
      [
        "-qec",
        [process.execPath, ...CLI, "storage", "get", "public/AAAAAAAAAAAAAAAAAAAAAA"]
          .map((arg) => `'${arg.replaceAll("'", "'\\''")}'`)
          .join(" "),
        "/dev/null",
      ],
      { encoding: "utf8", env: { ...process.env, ...env } },
    );
    expect(inTerminal.status).toBe(2);
    expect(inTerminal.stdout).toContain("Standard output is a terminal: write the file with --out <file>");
  });

  it("says what to do when no dev server runs", async () => {
    const result = runCli(["storage", "list", "--port", String(await freePort())], env);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("start one with platform dev");
  });
});

describe("platform storage against a hosted app", () => {
  it("lists with an inspect token, refuses hosted put without an account, deletes as the owner", async () => {
    const host = await startTestHost({ storageLimits: { listing: 1 } });
    try {
      const admin = { authorization: `Bearer ${host.adminToken}`, "content-type": "application/json" };
      const owner = (
        await sendRequest(`${host.url}/v1/developers`, { method: "POST", headers: admin, body: "{}" })
      ).json<{ id: string; token: string }>();
      await sendRequest(`${host.url}/v1/deploys`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ id: "hosted", code: await fixtureCode("todo"), owner: owner.id }),
      });
      const account = (
        await sendRequest(`${host.url}/v1/deploys/hosted/sessions`, {
          method: "POST",
          headers: admin,
          body: '{"email":"a@example.com"}',
        })
      ).json<{ token: string }>();
      const deployUrl = host.deploymentUrl("hosted");
      const refused = await runCliAsync(
        ["storage", "put", join(dir, "avatar.png"), "--deploy", deployUrl],
        env,
      );
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain("upload from the app instead");
      const put = await runCliAsync(
        [
          "storage",
          "put",
          join(dir, "avatar.png"),
          "--deploy",
          deployUrl,
          "--token",
          account.token,
          "--json",
          "--public",
        ],
        env,
      );
      const { key } = JSON.parse(put.stdout) as { key: string };
      const noCreds = await runCliAsync(["storage", "list", deployUrl], env);
      expect(noCreds.status).toBe(1);
      expect(noCreds.stderr).toContain("--inspect-token");
      const listed = await runCliAsync(["storage", "list", deployUrl, "--json"], {
        ...env,
        PLATFORM_INSPECT_TOKEN: owner.token,
      });
      expect(
        (JSON.parse(listed.stdout) as { objects: Array<{ uploaderEmail: string }> }).objects[0]
          ?.uploaderEmail,
      ).toBe("a@example.com");
      const publicGet = await runCliAsync(
        ["storage", "get", key, "--deploy", deployUrl, "--out", join(dir, "hosted.png")],
        env,
      );
      expect(publicGet.status, publicGet.stderr).toBe(0);
      await runCliAsync(
        ["storage", "put", join(dir, "avatar.png"), "--deploy", deployUrl, "--token", account.token],
        env,
      );
      const window = await runCliAsync(
        ["storage", "list", deployUrl, "--prefix", "public/", "--inspect-token", owner.token],
        env,
      );
      expect(window.status, window.stderr).toBe(0);
      expect(window.stdout).toContain(
        "Only the newest 1 file was checked for --prefix public/; older files were not.",
      );
      const deleted = await runCliAsync(["storage", "delete", key, "--deploy", deployUrl], {
        ...env,
        PLATFORM_TOKEN: owner.token,
      });
      expect(deleted.status, deleted.stderr).toBe(0);
    } finally {
      await host.dispose();
    }
  }, 60_000);
});
