/**
 * What the HTTP app answers where no route does, per origin: which route file owns a path (its
 * unknown paths end there), what falls through to the capsule's endpoints and client files, and
 * which check answers first. Routers must not change any of it (no 405s beyond the call routes'
 * own, see http-errors.test.ts; no trailing-slash or case-folded matches where there were none).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let hosted: TestHost;
let dev: TestHost;
let clientDir: string;

interface Answer {
  status: number;
  body: string;
}

function send(
  host: TestHost,
  hostHeader: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer | string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: host.port, method, path, headers: { host: hostHeader, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Sends `head` as it is on a new connection; resolves to all the server wrote back. */
function rawRequest(host: TestHost, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(host.port, "127.0.0.1", () => socket.write(head));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      // One answer is all this asks for: close once its body is in.
      const text = Buffer.concat(chunks).toString("utf8");
      const length = /content-length: (\d+)/i.exec(text);
      const bodyAt = text.indexOf("\r\n\r\n");
      if (length && bodyAt >= 0 && Buffer.byteLength(text.slice(bodyAt + 4)) >= Number(length[1]))
        socket.end();
    });
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
  });
}

const notFound = (message: string) => JSON.stringify({ error: { code: "not_found", message } });

beforeAll(async () => {
  hosted = await startTestHost({ requestQuota: false });
  expect((await hosted.deployFixture("ep", "endpoints")).status).toBe(201);
  clientDir = await mkdtemp(join(tmpdir(), "platform-routing-client-"));
  await writeFile(join(clientDir, "index.html"), "<p>client</p>");
  dev = await startTestHost({ requestQuota: false, devDeployment: "dev", devClientDirs: [clientDir] });
  await dev.deployments.deploy("dev", { code: await fixtureCode("endpoints") });
});
afterAll(async () => {
  await hosted.dispose();
  await dev.dispose();
  await rm(clientDir, { recursive: true, force: true });
});

describe("HTTP routing where no route answers", () => {
  it("control plane: /v1 and the dashboard end in 404 no route; unknown hosts are refused", async () => {
    for (const path of ["/v1", "/v1/nope", "/dashboard/nope"]) {
      const answer = await send(hosted, "localhost", "GET", path);
      expect([answer.status, answer.body]).toEqual([404, notFound(`No route for GET ${path}.`)]);
    }
    // An app's route asked of the control plane says where apps answer.
    const app = await send(hosted, "localhost", "POST", "/api/query/count");
    expect([app.status, app.body]).toEqual([
      404,
      notFound(
        `No route for POST /api/query/count: this is the host's control plane; each app answers at its own host name, http://<deployment id>.localhost/api/query/count.`,
      ),
    ]);
    const unknown = await send(hosted, "a.b.localhost", "GET", "/");
    expect([unknown.status, unknown.body]).toEqual([
      404,
      notFound("Unknown host a.b.localhost: deployments are served at <id>.localhost."),
    ]);
  });

  it("operator API: a malformed bearer header and a wrong token get their own answers", async () => {
    const malformed = await send(hosted, "localhost", "GET", "/v1/me", { authorization: "Bearer" });
    expect(malformed.status).toBe(401);
    expect(JSON.parse(malformed.body).error.message).toBe(
      "The operator API needs Authorization: Bearer <operator or developer token>.",
    );
    const wrong = await send(hosted, "localhost", "GET", "/v1/me", { authorization: "Bearer wrong" });
    expect([wrong.status, JSON.parse(wrong.body).error.message]).toEqual([
      403,
      "That token is not valid for this host.",
    ]);
  });

  it("deployment origin: sign-in and /api/ own their paths; others reach the endpoints", async () => {
    for (const [id, path] of [
      ["nope", "/__platform/auth/nope"],
      ["ep", "/api/nope"],
      ["ep", "/API/query/count"],
      ["ep", "/echo/"],
    ] as const) {
      const answer = await send(hosted, `${id}.localhost`, "GET", path);
      expect([answer.status, answer.body]).toEqual([404, notFound(`No route for GET ${path}.`)]);
    }
    // The live-query socket's path asked without a WebSocket says what it is.
    const sync = await send(hosted, "ep.localhost", "GET", "/api/sync");
    expect(sync.status).toBe(400);
    expect(JSON.parse(sync.body).error).toEqual({
      code: "bad_request",
      message:
        "/api/sync is the WebSocket of live queries: open it with a WebSocket (platform/client does), not a plain HTTP request.",
    });
    const missing = await send(hosted, "nope.localhost", "GET", "/x");
    expect([missing.status, missing.body]).toEqual([404, notFound("No deployment named nope.")]);
  });

  it("call routes: the kind in any case, one segment with or without a trailing slash", async () => {
    const noQuery = (name: string) => `No query named ${JSON.stringify(name)} in deployment ep.`;
    const cases: Array<[string, string, number, string]> = [
      ["POST", "/api/query/count", 200, ""],
      ["POST", "/api/query/count/", 200, ""],
      ["POST", "/api/QUERY/count", 200, ""],
      ["POST", "/api/Query/count?x=1", 200, ""],
      ["POST", "/api/query/c%6Funt", 200, ""],
      ["POST", "/api/query/a%2Fb", 404, noQuery("a/b")],
      ["POST", "/api/query/count%3F", 404, `${noQuery("count?")} Did you mean "count"?`],
      ["POST", "/api/query/count//", 404, "No route for POST /api/query/count//."],
      ["POST", "/api/query/", 404, "No route for POST /api/query/."],
      ["POST", "/api/query/a/b", 404, "No route for POST /api/query/a/b."],
      ["POST", "/api//query/count", 404, "No route for POST /api//query/count."],
      ["POST", "/api/queries/count", 404, "No route for POST /api/queries/count."],
    ];
    for (const [method, path, status, message] of cases) {
      const answer = await send(
        hosted,
        "ep.localhost",
        method,
        path,
        { "content-type": "application/json" },
        "{}",
      );
      expect([path, answer.status]).toEqual([path, status]);
      if (status === 200) expect(JSON.parse(answer.body)).toEqual({ value: 0 });
      else expect(answer.body).toBe(notFound(message));
    }
    for (const [method, path] of [
      ["PUT", "/api/query/count/"],
      ["GET", "/api/MUTATION/count"],
    ] as const) {
      const answer = await send(hosted, "ep.localhost", method, path);
      expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([405, "method_not_allowed"]);
    }
    // Node's parser passes RTSP's methods on an RTSP request line: not HTTP methods, so no 405.
    const rtsp = await rawRequest(hosted, "DESCRIBE /api/query/count RTSP/1.0\r\nHost: ep.localhost\r\n\r\n");
    expect(rtsp).toMatch(/^\S+ 404 /);
    expect(rtsp).toContain(notFound("No route for DESCRIBE /api/query/count."));
  });

  it("refuses a request that names two hosts: a Host header twice, or an absolute target naming another", async () => {
    const port = hosted.port;
    const twice = await rawRequest(
      hosted,
      `POST /api/query/count HTTP/1.1\r\nHost: ep.localhost:${port}\r\nHost: localhost:${port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    expect(twice).toMatch(/^HTTP\/1\.1 400 /);
    expect(twice).toContain("more than one Host header");
    const other = await rawRequest(
      hosted,
      `POST http://localhost:${port}/api/query/count HTTP/1.1\r\nHost: ep.localhost:${port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    expect(other).toMatch(/^HTTP\/1\.1 400 /);
    expect(other).toContain("names another host than its Host header");
    // An absolute target naming its own Host is the same request as its path.
    const same = await rawRequest(
      hosted,
      `POST http://ep.localhost:${port}/api/query/count HTTP/1.1\r\nHost: ep.localhost:${port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    expect(same).toMatch(/^HTTP\/1\.1 200 /);
    // The same host written with the scheme's default port is the same host.
    const defaults = await rawRequest(
      hosted,
      `POST http://ep.localhost:80/api/query/count HTTP/1.1\r\nHost: EP.localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    expect(defaults).not.toMatch(/^HTTP\/1\.1 400 /);
    // A sync socket's upgrade likewise.
    const upgrade = await rawRequest(
      hosted,
      `GET /api/sync HTTP/1.1\r\nHost: ep.localhost:${port}\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    expect(upgrade).toMatch(/^HTTP\/1\.1 400 /);
  });

  it("storage owns /storage and the listing path, with its own 404s", async () => {
    const cases: Array<[string, string, string]> = [
      ["GET", "/storage/bad/x", "No such object."],
      ["GET", "/storage/a/b/c", "No such object."],
      ["GET", "/storage/public/AAAAAAAAAAAAAAAAAAAAAA/", "No such object."],
      ["PUT", "/storage/public/AAAAAAAAAAAAAAAAAAAAAA", "No such route."],
      ["PROPFIND", "/storage/public/AAAAAAAAAAAAAAAAAAAAAA", "No such route."],
      ["POST", "/__platform/storage", "No route for POST /__platform/storage."],
    ];
    for (const [method, path, message] of cases) {
      const answer = await send(hosted, "ep.localhost", method, path);
      expect([method, path, answer.status, answer.body]).toEqual([method, path, 404, notFound(message)]);
    }
    expect((await send(hosted, "ep.localhost", "HEAD", "/__platform/storage")).status).toBe(404);
    const noDeployment = await send(hosted, "nope.localhost", "POST", "/storage");
    expect(noDeployment.body).toBe(notFound("No deployment named nope."));
  });

  it("reads the body before the token, so an oversized body with a bad header is 413", async () => {
    const answer = await send(
      hosted,
      "ep.localhost",
      "POST",
      "/api/query/count",
      { authorization: "Basic x" },
      Buffer.alloc(1024 * 1024 + 1, 32),
    );
    expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([413, "too_large"]);
  });

  it("platform dev: logs answer GET only; other methods fall through to the client files", async () => {
    expect((await send(dev, "anything.localhost", "GET", "/__platform/logs")).status).toBe(200);
    const head = await send(dev, "anything.localhost", "HEAD", "/__platform/logs");
    expect(head.status).toBe(404);
    const post = await send(dev, "anything.localhost", "POST", "/__platform/logs");
    expect(post.body).toBe(notFound("No route for POST /__platform/logs."));
    expect((await send(dev, "anything.localhost", "GET", "/")).body).toBe("<p>client</p>");
    const auth = await send(dev, "anything.localhost", "GET", "/__platform/auth/nope");
    expect(auth.body).toBe(notFound("No route for GET /__platform/auth/nope."));
  });
});
