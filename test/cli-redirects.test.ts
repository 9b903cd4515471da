/**
 * A redirect is not success: every command that talks to a host fails on one, naming where it
 * points, and follows none (it would take the token along). A TLS proxy's `301` to https made
 * `platform deploy --host http://...` print "deployed" and exit 0 with nothing deployed (an attack
 * review, 2026-12-06). The built CLI against loopback servers standing in for the proxy.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { type FakeHost, startFakeHost } from "./helpers/fake-host.js";

/** Answers 301 to https of the same name, as a TLS proxy does on plain HTTP. */
let toHttps: FakeHost;
/** Answers 307 to {@link elsewhere}. */
let toElsewhere: FakeHost;
/** Where {@link toElsewhere} points: it must never be asked anything. */
let elsewhere: FakeHost;
/** Answers 200 with a page, as a captive portal or a wrong server does. */
let notAHost: FakeHost;
let dir: string;
const KEY = "private/AbCdEfGhIjKlMnOpQrStUv";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-redirects-"));
  await writeFile(join(dir, "app.zip"), "an archive");
  elsewhere = await startFakeHost((_req, res) => res.end("{}"));
  toHttps = await startFakeHost((req, res) => {
    res.writeHead(301, { location: `https://localhost${req.url}` });
    res.end();
  });
  toElsewhere = await startFakeHost((req, res) => {
    res.writeHead(307, { location: `${elsewhere.url}${req.url}` });
    res.end();
  });
  notAHost = await startFakeHost((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<html>Welcome to the network</html>");
  });
});
afterAll(async () => {
  await Promise.all([toHttps, toElsewhere, elsewhere, notAHost].map((server) => server?.close()));
  await rm(dir, { recursive: true, force: true });
});

const platform = (...args: string[]) =>
  runCliAsync(args, { PLATFORM_CONFIG_DIR: join(dir, "config"), PLATFORM_TOKEN: "pdt_owner" });

it("deploy fails on a proxy's redirect to https, saying which --host to use", async () => {
  const host = `http://localhost:${toHttps.port}`;
  const deployed = await platform("deploy", "fixtures/todo", "--host", host, "--name", "app");
  expect(deployed.status).toBe(1);
  expect(deployed.stdout).not.toContain("deployed");
  expect(deployed.stderr).toContain(
    "error: bad_request: The host answered with a redirect to https://localhost/v1/deploys/app (301); nothing was done",
  );
  expect(deployed.stderr).toContain("Use --host https://localhost.");
  expect(toHttps.requests.map((r) => `${r.method} ${r.url}`)).toEqual(["PUT /v1/deploys/app"]);
}, 60_000);

it("every command fails on a redirect and follows none", async () => {
  const host = `http://localhost:${toElsewhere.port}`;
  const commands = [
    ["logs", "app", "--host", host],
    ["export", "app", "--host", host, "--out", join(dir, "out.zip")],
    ["import", join(dir, "app.zip"), "app", "--host", host],
    ["host", "backup", "--host", host, "--out", join(dir, "backup"), "--token", "adm"],
    ["login", "--host", host, "--token", "pdt_owner"],
    ["developers", "create", "--host", host, "--token", "adm"],
    ["storage", "list", "app", "--host", host],
    ["storage", "get", KEY, "--deploy", "app", "--host", host, "--out", join(dir, "file")],
    ["storage", "delete", KEY, "--deploy", "app", "--host", host],
    ["storage", "put", join(dir, "app.zip"), "--deploy", "app", "--host", host, "--token", "t"],
  ];
  for (const args of commands) {
    const failed = await platform(...args);
    expect([failed.status, failed.stdout], args.join(" ")).toEqual([1, ""]);
    expect(failed.stderr, args.join(" ")).toMatch(
      new RegExp(`^error: bad_request: The host answered with a redirect to ${elsewhere.url}/.* \\(307\\)`),
    );
  }
  expect(toElsewhere.requests).toHaveLength(commands.length);
  expect(elsewhere.requests).toEqual([]);
}, 120_000);

it("deploy fails when a success status comes without the deploy's result", async () => {
  const host = `http://localhost:${notAHost.port}`;
  const deployed = await platform("deploy", "fixtures/todo", "--host", host, "--name", "app");
  expect(deployed.status).toBe(1);
  expect(deployed.stdout).not.toContain("deployed");
  expect(deployed.stderr).toContain(
    "error: unavailable: The host's answer ended without the deploy's result",
  );
}, 60_000);
