/**
 * The CLI against a control plane behind TLS, as docs/security.md tells operators to run it: every
 * command that talks to a host (deploy, logs, export, ...) speaks https to an https URL, so tokens
 * and server env never have to travel over plain HTTP. A TLS proxy on loopback with a certificate
 * made for the test (trusted through NODE_EXTRA_CA_CERTS) in front of a real host.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let proxy: Server;
let dir: string;
let httpsUrl: string;

beforeAll(async () => {
  host = await startTestHost();
  dir = mkdtempSync(join(tmpdir(), "platform-https-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdio: "ignore" },
  );
  const target = new URL(host.url);
  proxy = createServer(
    { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
    (req, res) => {
      const upstream = httpRequest(
        { host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    },
  );
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  httpsUrl = `https://localhost:${(proxy.address() as AddressInfo).port}`;
}, 60_000);
afterAll(async () => {
  proxy?.close();
  await host.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it("deploys and reads logs over https", async () => {
  const env = {
    PLATFORM_ADMIN_TOKEN: host.adminToken,
    PLATFORM_CONFIG_DIR: join(dir, "config"),
    NODE_EXTRA_CA_CERTS: join(dir, "cert.pem"),
  };
  const deployed = await runCliAsync(
    ["deploy", "fixtures/todo", "--host", httpsUrl, "--name", "over-tls"],
    env,
  );
  expect(deployed.status, deployed.stderr).toBe(0);
  expect((await host.admin("/v1/deploys/over-tls", "GET")).json()).toMatchObject({ id: "over-tls" });
  const logs = await runCliAsync(["logs", "over-tls", "--host", httpsUrl, "--json"], env);
  expect(logs.status, logs.stderr).toBe(0);
}, 120_000);

it("refuses to send a token over plain HTTP to a host that is not this machine", async () => {
  const env = { PLATFORM_ADMIN_TOKEN: "not-sent-anywhere", PLATFORM_CONFIG_DIR: join(dir, "config") };
  const remote = await runCliAsync(["logs", "some-app", "--host", "http://platform.invalid:9"], env);
  expect(remote.status).toBe(2);
  expect(remote.stderr).toContain("error: http://platform.invalid:9 is plain HTTP and not this machine");
  const local = await runCliAsync(["logs", "some-app", "--host", host.url], env);
  expect(local.stderr).not.toContain("plain HTTP");
}, 60_000);
