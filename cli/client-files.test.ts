/**
 * What `platform deploy` publishes of `client/` when it holds symbolic links: a link whose real
 * path stays inside `client/` is published as the file or folder it leads to; one that leaves the
 * folder (`client/logo.png -> ~/.ssh/id_ed25519`, a folder link) or leads nowhere is not, with a
 * warning naming it and saying why. A file over the limit is refused by its size, unread.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS, printable, UNPRINTABLE } from "../sdk/protocol/index.js";
import { collectClientFiles } from "./client-files.js";

let root: string;
let capsule: string;
let client: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "platform-client-files-"));
  capsule = join(root, "app");
  client = join(capsule, "client");
  await mkdir(join(client, "img"), { recursive: true });
  await writeFile(join(client, "index.html"), "<!doctype html>");
  await writeFile(join(client, "img", "logo.svg"), "<svg/>");
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** The capsule's client as `platform deploy` would send it, as `[path, text]`, and its warnings. */
async function collect(): Promise<{ files: string[][]; warnings: string[] }> {
  const warnings: string[] = [];
  const uploads = await collectClientFiles(capsule, { warn: (message) => warnings.push(message) });
  return { files: uploads.map((file) => [file.path, file.bytes.toString()]), warnings: warnings.sort() };
}

it("never publishes what a link outside client/ leads to, and says so", async () => {
  const ssh = join(root, "home", ".ssh");
  await mkdir(ssh, { recursive: true });
  await writeFile(join(ssh, "id_ed25519"), "PRIVATE KEY");
  await symlink(join(ssh, "id_ed25519"), join(client, "logo.png"));
  await symlink(ssh, join(client, "keys"));
  await symlink(join("..", "..", "..", "home", ".ssh", "id_ed25519"), join(client, "img", "relative.png"));
  const { files, warnings } = await collect();
  expect(files).toEqual([
    ["img/logo.svg", "<svg/>"],
    ["index.html", "<!doctype html>"],
  ]);
  expect(warnings).toEqual([
    `client/img/relative.png is not published: it is a symbolic link to ${join(ssh, "id_ed25519")}, outside client/.`,
    `client/keys is not published: it is a symbolic link to ${ssh}, outside client/.`,
    `client/logo.png is not published: it is a symbolic link to ${join(ssh, "id_ed25519")}, outside client/.`,
  ]);
});

it("publishes nothing of a client/ that is a link out of the project, and says so", async () => {
  // A template's `client -> ../../.ssh` published the developer's keys.
  const ssh = join(root, "home", ".ssh");
  await mkdir(ssh, { recursive: true });
  await writeFile(join(ssh, "id_ed25519"), "PRIVATE KEY");
  await rm(client, { recursive: true });
  await symlink(join("..", "home", ".ssh"), client);
  const { files, warnings } = await collect();
  expect(files).toEqual([]);
  expect(warnings).toEqual([
    `client/ is not published: it is a symbolic link to ${ssh}, outside the project or into a dot-folder of it. Copy or build the files into client/.`,
  ]);
  // Nor one into a dot-folder of the project: `.git/config` may hold a remote's credentials.
  await rm(client);
  await mkdir(join(capsule, ".git"));
  await writeFile(join(capsule, ".git", "config"), "url = https://token@example.com/repo");
  await symlink(".git", client);
  expect((await collect()).files).toEqual([]);
  // A link to a folder of the project is published as that folder.
  await rm(client);
  await mkdir(join(capsule, "public"));
  await writeFile(join(capsule, "public", "index.html"), "public page");
  await symlink("public", client);
  expect(await collect()).toEqual({ files: [["index.html", "public page"]], warnings: [] });
});

it("skips a pipe or a socket with a warning, unread", async () => {
  // Opened, a pipe with no writer would hold the deploy for good.
  expect(spawnSync("mkfifo", [join(client, "img", "fifo.png")]).status).toBe(0);
  const { files, warnings } = await collect();
  expect(files.map(([path]) => path)).toEqual(["img/logo.svg", "index.html"]);
  expect(warnings).toEqual([
    "client/img/fifo.png is not published: it is not a regular file (a pipe, socket or device).",
  ]);
});

it("skips a link that leads nowhere with a warning, instead of failing the deploy", async () => {
  await symlink(join(client, "missing.txt"), join(client, "broken.txt"));
  const { files, warnings } = await collect();
  expect(files.map(([path]) => path)).toEqual(["img/logo.svg", "index.html"]);
  expect(warnings).toEqual(["client/broken.txt is not published: it is a symbolic link that leads nowhere."]);
});

it("publishes links inside client/ as what they lead to, and walks a loop once", async () => {
  await symlink(join("img", "logo.svg"), join(client, "favicon.svg"));
  await symlink("img", join(client, "images"));
  await symlink("..", join(client, "img", "up"));
  const { files, warnings } = await collect();
  expect(files).toEqual([
    ["favicon.svg", "<svg/>"],
    ["images/logo.svg", "<svg/>"],
    ["img/logo.svg", "<svg/>"],
    ["index.html", "<!doctype html>"],
  ]);
  expect(warnings).toEqual([
    "client/images/up is not published: it is a symbolic link to a folder that holds it.",
    "client/img/up is not published: it is a symbolic link to a folder that holds it.",
  ]);
}, 20_000);

it("refuses paths longer together than a deploy takes before uploading anything", async () => {
  // Every host keeps a version's paths in memory: the host refuses more than LIMITS.clientPathChars
  // (413), and the command says so before the upload.
  const deep = join(client, "a".repeat(200), "b".repeat(200));
  await mkdir(deep, { recursive: true });
  const count = Math.ceil(LIMITS.clientPathChars / 400) + 1;
  for (let i = 0; i < count; i++) await writeFile(join(deep, `${i}.txt`), "");
  await expect(collect()).rejects.toMatchObject({
    code: "too_large",
    message: expect.stringContaining(`a deploy takes at most ${LIMITS.clientPathChars}`),
  });
}, 60_000);

it("refuses a file over the limit by its size, before reading it", async () => {
  // Sparse: 3 GiB that take no room on disk. Read whole, it would not even fit in a Buffer (Node
  // refuses files over 2 GiB), so only a check before the read gives this refusal.
  const big = join(client, "big.bin");
  await writeFile(big, "");
  await truncate(big, 3 * 1024 ** 3);
  await expect(collect()).rejects.toMatchObject({
    code: "too_large",
    message: `client file big.bin is ${3 * 1024 ** 3} bytes; one file may be at most ${LIMITS.clientFileBytes} bytes.`,
  });
});

it("publishes a file of exactly the limit, whole", async () => {
  await writeFile(join(client, "full.bin"), Buffer.alloc(LIMITS.clientFileBytes, 7));
  const uploads = await collectClientFiles(capsule, { warn: () => {} });
  const full = uploads.find((file) => file.path === "full.bin");
  expect(full?.bytes.equals(Buffer.alloc(LIMITS.clientFileBytes, 7))).toBe(true);
});

it("names a link left out with its escape codes shown escaped, not sent to the terminal", async () => {
  // OSC 52 (set the clipboard), erase the line, then conceal what follows.
  const name = "x\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2Kclient: 0 links skipped\u001b[8m";
  const outside = join(root, "outside\u001b[2J");
  await writeFile(outside, "SECRET");
  await symlink(outside, join(client, name));
  const { warnings } = await collect();
  expect(warnings).toEqual([
    `client/${printable(name)} is not published: it is a symbolic link to ${printable(outside)}, outside client/.`,
  ]);
  expect(UNPRINTABLE.test(warnings[0] ?? "")).toBe(false);
  expect(warnings[0]).toContain("x\\u001b]52;c;");
});
