/**
 * `platform dev` serves only files whose real path is inside the folder it serves: a symbolic link
 * in `client/` to a file or folder elsewhere (`client/logo.png -> ~/.ssh/id_ed25519`) is not
 * found, while one that stays inside is served as the file it leads to. Only regular files are
 * served: a FIFO is not found, and never waited on.
 */
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Koa from "koa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../../cli/http.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { staticFiles } from "./static-files.js";

let root: string;
let server: Server;
let base: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "platform-static-files-"));
  const client = join(root, "client");
  const ssh = join(root, "home", ".ssh");
  await mkdir(join(client, "img"), { recursive: true });
  await mkdir(join(client, "docs"), { recursive: true });
  await mkdir(ssh, { recursive: true });
  await writeFile(join(ssh, "id_ed25519"), "PRIVATE KEY");
  await writeFile(join(ssh, "index.html"), "PRIVATE PAGE");
  await writeFile(join(client, "index.html"), "<!doctype html>");
  await writeFile(join(client, "img", "logo.svg"), "<svg/>");
  await symlink(join(ssh, "id_ed25519"), join(client, "logo.png"));
  await symlink(ssh, join(client, "keys"));
  await symlink(join(ssh, "index.html"), join(client, "docs", "index.html"));
  await symlink(join("img", "logo.svg"), join(client, "favicon.svg"));
  await symlink("img", join(client, "images"));
  await mkdir(join(client, ".git"), { recursive: true });
  await mkdir(join(client, ".well-known"), { recursive: true });
  await writeFile(join(client, ".env"), "SECRET=1");
  await writeFile(join(client, ".git", "config"), "url = https://token@example.com/repo");
  await writeFile(join(client, "app.ts"), "export const secret = 1;");
  await writeFile(join(client, ".well-known", "security.txt"), "Contact: a@example.com");
  execFileSync("mkfifo", [join(client, "pipe.txt")]);
  await symlink("pipe.txt", join(client, "pipe-link.txt"));
  const app = new Koa();
  app.use(staticFiles([client]));
  server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  base = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  // Whatever still waits on the FIFO for a writer gets one, and then its end: without the check of
  // the file's type, reads stay blocked, each holding a thread of the pool file reads share.
  try {
    closeSync(openSync(join(root, "client", "pipe.txt"), constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // ENXIO: no reader waits.
  }
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

const get = async (path: string) => {
  const response = await sendRequest(`${base}${path}`);
  return [response.status, response.status === 200 ? response.text() : ""];
};

it("does not serve what a symbolic link outside the folder leads to", async () => {
  expect(await get("/logo.png")).toEqual([404, ""]);
  expect(await get("/keys/id_ed25519")).toEqual([404, ""]);
  expect(await get("/keys/")).toEqual([404, ""]);
  expect(await get("/docs/")).toEqual([404, ""]);
});

it("serves files, and links that stay inside the folder as what they lead to", async () => {
  expect(await get("/")).toEqual([200, "<!doctype html>"]);
  expect(await get("/img/logo.svg")).toEqual([200, "<svg/>"]);
  expect(await get("/favicon.svg")).toEqual([200, "<svg/>"]);
  expect(await get("/images/logo.svg")).toEqual([200, "<svg/>"]);
});

it("does not serve what platform deploy leaves out: dot-files, dot-folders and sources", async () => {
  expect(await get("/.env")).toEqual([404, ""]);
  expect(await get("/.git/config")).toEqual([404, ""]);
  expect(await get("/%2egit/config")).toEqual([404, ""]);
  expect(await get("/app.ts")).toEqual([404, ""]);
  expect(await get("/img/../.env")).toEqual([404, ""]);
  expect(await get("/.well-known/security.txt")).toEqual([200, "Contact: a@example.com"]);
});

it("does not serve a FIFO, nor wait on one: other files are still served meanwhile", async () => {
  // Four reads waiting on a FIFO held all four threads of libuv's pool: every file read after
  // them, the page's included, waited too.
  const pipes = Array.from({ length: 6 }, (_, i) => get(i % 2 === 0 ? "/pipe.txt" : "/pipe-link.txt"));
  const [page, ...answers] = await Promise.all([get("/"), ...pipes]);
  expect(answers).toEqual(Array(6).fill([404, ""]));
  expect(page).toEqual([200, "<!doctype html>"]);
});

it("refuses a file larger than platform deploy publishes by its size, unread", async () => {
  // A 2 GB file in client/ was read whole into memory at each GET.
  const big = join(root, "client", "video.mp4");
  await writeFile(big, "");
  await truncate(big, 2 * 1024 * 1024 * 1024);
  const response = await sendRequest(`${base}/video.mp4`);
  expect(response.status).toBe(413);
  expect(response.text()).toContain(
    `platform deploy publishes client files of at most ${LIMITS.clientFileBytes} bytes`,
  );
  expect(await get("/")).toEqual([200, "<!doctype html>"]);
});

it("does not serve a client folder that is itself a link out of its project; one that stays inside is served", async () => {
  // A template's `client -> /proc/self` served dev's environment (`/environ`) to the app's page.
  const outside = join(root, "outside-project");
  const inside = join(root, "inside-project");
  await mkdir(join(outside), { recursive: true });
  await mkdir(join(inside, "public"), { recursive: true });
  await writeFile(join(inside, "public", "index.html"), "public page");
  await symlink(join("..", "home", ".ssh"), join(outside, "client"));
  await symlink("/proc/self", join(outside, "proc"));
  await mkdir(join(outside, ".git"));
  await writeFile(join(outside, ".git", "config"), "url = https://token@example.com/repo");
  await symlink(".git", join(outside, "git"));
  await symlink("public", join(inside, "client"));
  const app = new Koa();
  app.use(
    staticFiles([
      join(outside, "client"),
      join(outside, "proc"),
      join(outside, "git"),
      join(inside, "client"),
    ]),
  );
  const linked = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => linked.once("listening", resolve));
  try {
    const address = linked.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const fetch = async (path: string) => {
      const response = await sendRequest(`http://127.0.0.1:${address.port}${path}`);
      return [response.status, response.status === 200 ? response.text() : ""];
    };
    expect(await fetch("/id_ed25519")).toEqual([404, ""]);
    expect(await fetch("/environ")).toEqual([404, ""]);
    expect(await fetch("/config")).toEqual([404, ""]);
    expect(await fetch("/")).toEqual([200, "public page"]);
  } finally {
    await new Promise((resolve) => linked.close(resolve));
  }
});
