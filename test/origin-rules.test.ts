/**
 * The browser rules the control plane and `platform dev` hold, tried over plain HTTP: dashboard
 * forms refuse other origins (login CSRF), sign-in redirects stay on this site, a capsule's endpoint
 * cannot set cookies for other origins or under the control plane's names, `platform dev` answers
 * only loopback Host names (DNS rebinding) and pages of this machine (any site's page could open
 * its socket), and malformed percent-escapes are `400`, never `500`.
 * Real browsers try the form and redirect cases in dashboard-origin.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { fixtureCode, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let dev: TestHost;
let developerToken: string;

const COOKIE_CAPSULE = `import { capsule, endpoint, table, number, text } from "platform/server";
export default capsule({
  schema: { items: table({ n: number() }) },
  endpoints: {
    cookie: endpoint({ method: "GET", path: "/cookie", readOnly: true }, async (_ctx, req) =>
      text("ok", { headers: { "set-cookie": (req.query.get("value") ?? "") + ";".repeat(Number(req.query.get("semicolons") ?? 0)) } })),
    untyped: endpoint({ method: "GET", path: "/untyped", readOnly: true }, async () =>
      ({ kind: "platform.response", status: 200, headers: { "content-type": null }, body: "<script>alert(1)</script>" })),
    header: endpoint({ method: "GET", path: "/header", readOnly: true }, async (_ctx, req) =>
      text("ok", { headers: { [req.query.get("name") ?? "x"]: req.query.get("value") ?? "" } })),
  },
});
`;

beforeAll(async () => {
  host = await startTestHost();
  dev = await startTestHost({ devDeployment: "dev" });
  const deployed = await host.deployCode("cookies", await sourceCode(COOKIE_CAPSULE));
  expect(deployed.status, deployed.text()).toBe(201);
  await dev.deployments.deploy("dev", { code: await fixtureCode("todo") });
  const developer = await host.admin("/v1/developers", "POST", { name: "Olga" });
  developerToken = developer.json<{ token: string }>().token;
});
afterAll(async () => {
  await host.dispose();
  await dev.dispose();
});

/** Posts the sign-in form with `headers` (as a browser would add them) and `next`. */
function signIn(headers: Record<string, string>, next = "/deploys/x/storage") {
  return sendRequest(`${host.url}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: `token=${encodeURIComponent(developerToken)}&next=${encodeURIComponent(next)}`,
  });
}

describe("dashboard forms accept only this origin", () => {
  it("refuses a sign-in posted from another site, a sibling deployment or an opaque origin", async () => {
    const site = `http://cookies.localhost:${host.port}`;
    const foreign: Record<string, string>[] = [
      { origin: "http://evil.example" },
      { origin: "null" },
      { origin: site },
      { origin: "http://evil.example", referer: `${host.url}/dashboard/login` },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site", origin: site },
      { "sec-fetch-site": "cross-site", origin: host.url },
      { referer: "http://evil.example/form.html" },
      { referer: `${site}/form.html` },
    ];
    for (const headers of foreign) {
      const response = await signIn(headers);
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(response.headers["set-cookie"], JSON.stringify(headers)).toBeUndefined();
      expect(response.text()).toContain("another site");
    }
  });

  it("accepts a sign-in from its own pages (and from clients that send no browser headers)", async () => {
    const own: Record<string, string>[] = [
      { origin: host.url },
      { origin: host.url, "sec-fetch-site": "same-origin" },
      { "sec-fetch-site": "same-origin" },
      { referer: `${host.url}/dashboard/login?next=%2F` },
      {},
    ];
    for (const headers of own) {
      const response = await signIn(headers);
      expect(response.status, JSON.stringify(headers)).toBe(302);
      expect(String(response.headers["set-cookie"])).toContain("platform_session=");
    }
  });

  it("refuses a delete form posted from another site", async () => {
    const response = await sendRequest(`${host.url}/deploys/cookies/storage/delete`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://evil.example" },
      body: "key=public/x&csrf=x",
    });
    expect(response.status).toBe(403);
  });

  it("redirects after sign-in only to paths on this site", async () => {
    const offSite = [
      "//evil.example",
      "/\\evil.example",
      "/\\\\evil",
      "\\\\evil.example",
      "https://evil.example",
      "https:evil.example",
      "/\t/evil.example",
      "/\n/evil.example",
      "/\r\\evil.example",
      " //evil.example",
      "/%5Cevil.example",
      "/%2F/evil.example",
      "/%5c%5cevil",
      "javascript:alert(1)",
      "deploys/x/storage",
      "",
    ];
    for (const next of offSite) {
      const response = await signIn({ origin: host.url }, next);
      expect(response.status, JSON.stringify(next)).toBe(302);
      expect(response.headers.location, JSON.stringify(next)).toBe("/");
    }
    for (const next of ["/deploys/x/storage", "/deploys/x/storage?tab=1#top", "/"]) {
      const response = await signIn({ origin: host.url }, next);
      expect(response.headers.location).toBe(next);
    }
    const form = await sendRequest(
      `${host.url}/dashboard/login?next=${encodeURIComponent("/\\evil.example")}`,
    );
    expect(form.text()).toContain('name="next" value="/"');
  });
});

describe("custom endpoints set cookies for their own origin only", () => {
  const setCookie = (value: string) =>
    sendRequest(`${host.deploymentUrl("cookies")}/cookie?value=${encodeURIComponent(value)}`);

  it("drops Domain attributes, so a cookie stays on the deployment's own host", async () => {
    const cases: [string, string][] = [
      ["theme=dark; Domain=localhost; Path=/", "theme=dark; Path=/"],
      ["theme=dark;domain=.localhost", "theme=dark"],
      ["theme=dark; Path=/; DOMAIN = localhost ; HttpOnly", "theme=dark; Path=/; HttpOnly"],
      ["theme=dark; Path=/; Secure; SameSite=Lax", "theme=dark; Path=/; Secure; SameSite=Lax"],
    ];
    for (const [sent, served] of cases) {
      const response = await setCookie(sent);
      expect(response.status, sent).toBe(200);
      expect(response.headers["set-cookie"], sent).toEqual([served]);
    }
  });

  it("refuses cookies named like the control plane's, prefixed or not, and nameless cookies", async () => {
    for (const value of [
      "platform_session=stolen; Path=/",
      "Platform_Session=stolen",
      " platform_session =stolen",
      "__Host-platform_session=stolen; Path=/; Secure",
      "__Secure-platform_session=stolen; Secure",
      "__host-platform_session=stolen",
      "=platform_session=stolen",
      "platform_session",
    ]) {
      const response = await setCookie(value);
      expect(response.status, value).toBe(500);
      expect(response.headers["set-cookie"], value).toBeUndefined();
      expect(response.json<{ error: { code: string; message: string } }>().error, value).toMatchObject({
        code: "handler_error",
        message: expect.stringContaining("Set-Cookie"),
      });
    }
  });
});

describe("custom endpoints set headers that reach no further than their own answer", () => {
  const answer = (name: string, value: string) =>
    sendRequest(
      `${host.deploymentUrl("cookies")}/header?name=${encodeURIComponent(name)}&value=${encodeURIComponent(value)}`,
    );

  it("drops headers that clear other sites' cookies, redirect inside or signal the proxy, or are the platform's framing", async () => {
    for (const [name, value] of [
      ["Clear-Site-Data", '"cookies", "storage"'],
      ["X-Accel-Redirect", "/internal/secret"],
      ["x-accel-buffering", "no"],
      ["X-Sendfile", "/etc/passwd"],
      ["X-Lighttpd-Send-File", "/etc/passwd"],
      ["Proxy-Connection", "keep-alive"],
      ["TE", "trailers"],
      ["Trailer", "Expires"],
      ["Content-Encoding", "gzip"],
      ["Alt-Svc", 'h2="evil.example:443"'],
      ["X-Envoy-Immediate-Health-Check-Fail", "true"],
      ["x-envoy-degraded", "1"],
      ["X-LiteSpeed-Location", "/internal/secret"],
      ["X-LiteSpeed-Purge", "*"],
      ["X-Reproxy-URL", "http://127.0.0.1:8080/v1/backup"],
    ] as const) {
      const response = await answer(name, value);
      expect(response.status, name).toBe(200);
      expect(response.text(), name).toBe("ok");
      expect(response.headers[name.toLowerCase()], name).toBeUndefined();
    }
    // Without a type of its own, an answer is text, never sniffed, whatever it starts with.
    const untyped = await sendRequest(`${host.deploymentUrl("cookies")}/untyped`);
    expect([
      untyped.text(),
      untyped.headers["content-type"],
      untyped.headers["x-content-type-options"],
    ]).toEqual(["<script>alert(1)</script>", "text/plain; charset=utf-8", "nosniff"]);
    const dated = await answer("Date", "Thu, 01 Jan 1970 00:00:00 GMT");
    expect(dated.headers.date).not.toBe("Thu, 01 Jan 1970 00:00:00 GMT");
    expect((await answer("X-Frame-Kind", "mine")).headers["x-frame-kind"]).toBe("mine");
  });

  it("fails the call whose headers pass 64 KiB before reading them (8 MB of Set-Cookie attributes held the host)", async () => {
    const response = await sendRequest(
      `${host.deploymentUrl("cookies")}/cookie?value=a%3Db&semicolons=8000000`,
    );
    expect([response.status, response.headers["set-cookie"], response.json()]).toEqual([
      500,
      undefined,
      {
        error: {
          code: "handler_error",
          message: `Endpoint cookie returned 8000050 characters of headers; an answer has at most ${LIMITS.endpointResponseHeaderChars}, names and values together.`, // text()'s Content-Type included
        },
      },
    ]);
  });

  it("fails the call naming a header HTTP does not allow, instead of an internal error", async () => {
    for (const name of ["bad name", "x\u0000y", "colon:name", ""]) {
      const response = await answer(name, "v");
      expect(response.status, name).toBe(500);
      expect(response.json<{ error: { code: string; message: string } }>().error, name).toMatchObject({
        code: "handler_error",
        message: expect.stringContaining(JSON.stringify(name)),
      });
    }
    const response = await answer("X-Ok", "bell\u0007");
    expect(response.status).toBe(500);
    expect(response.json<{ error: { code: string } }>().error.code).toBe("handler_error");
  });
});

/** Opens the dev host's sync socket with `headers`: "open", or "refused <status>" at the upgrade. */
function openDevSocket(headers: Record<string, string>): Promise<string> {
  return new Promise<string>((resolve) => {
    const ws = new WebSocket(`${dev.url.replace("http", "ws")}/api/sync`, { headers });
    ws.on("open", () => {
      ws.close();
      resolve("open");
    });
    ws.on("unexpected-response", (_req, res) => {
      resolve(`refused ${res.statusCode}`);
      ws.terminate();
    });
    ws.on("error", (error) => resolve(`error ${error.message}`));
  });
}

describe("platform dev answers loopback Host names only", () => {
  const ask = (hostHeader: string) =>
    sendRequest(`${dev.url}/api/query/count`, {
      method: "POST",
      headers: { host: hostHeader, "content-type": "application/json" },
      body: "{}",
    });

  it("refuses other Host names with 403 naming the Host", async () => {
    for (const name of [
      "evil.example",
      `evil.example:${dev.port}`,
      "localhost.evil.example",
      "127.0.0.1.nip.io",
      "localhostx",
      "128.0.0.1",
      "127.0.0.256",
      "0.0.0.0",
      "[::2]",
      "[::1].evil.example",
      "10.0.0.1",
    ]) {
      const response = await ask(name);
      expect(response.status, name).toBe(403);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe("forbidden");
      expect(error.message).toContain(name);
      expect(error.message).toContain("localhost");
    }
  });

  it("answers localhost, *.localhost, 127.0.0.0/8 and [::1] with or without a port", async () => {
    for (const name of [
      "localhost",
      `localhost:${dev.port}`,
      "LOCALHOST",
      "app.localhost:3000",
      "127.0.0.1",
      `127.0.0.1:${dev.port}`,
      "127.1.2.3:80",
      "[::1]",
      `[::1]:${dev.port}`,
    ]) {
      const response = await ask(name);
      expect(response.status, name).toBe(200);
      expect(response.json()).toEqual({ value: 0 });
    }
  });

  it("refuses a WebSocket whose Host is not loopback", async () => {
    const open = (hostHeader: string) => openDevSocket({ host: hostHeader });
    expect(await open("evil.example")).toMatch(/^refused 4\d\d$/);
    expect(await open(`localhost:${dev.port}`)).toBe("open");
  });
});

describe("platform dev answers pages of this machine only", () => {
  // A page of any site the developer visits can open ws://localhost:<port> or post to it; its
  // browser sends the page's origin, and the request goes to a loopback Host all the same.
  const open = (origin: string | undefined) =>
    openDevSocket({ host: `localhost:${dev.port}`, ...(origin ? { origin } : {}) });
  const post = (origin: string | undefined, type = "application/json") =>
    sendRequest(`${dev.url}/api/mutation/add`, {
      method: "POST",
      headers: { host: `localhost:${dev.port}`, "content-type": type, ...(origin ? { origin } : {}) },
      body: JSON.stringify({ text: "from a page" }),
    });
  const OTHER_SITES = [
    "https://evil.example",
    "http://localhost.evil.example",
    "null",
    "file://",
    "http://10.0.0.1:3000",
  ];

  it("refuses sockets and calls from pages of other sites with 403, writing nothing", async () => {
    for (const origin of OTHER_SITES) {
      expect(await open(origin), origin).toBe("refused 403");
      const response = await post(origin, "text/plain");
      expect(response.status, origin).toBe(403);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe("forbidden");
      expect(error.message).toContain(JSON.stringify(origin));
    }
    const count = await sendRequest(`${dev.url}/api/query/count`, {
      method: "POST",
      headers: { host: `localhost:${dev.port}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(count.json()).toEqual({ value: 0 });
  });

  it("refuses dev's own routes to another site's image or link, which sends no Origin", async () => {
    // Repeated, `<img src="http://localhost:3000/__platform/logs?follow=1">` took every log stream.
    const fetchDev = (path: string, headers: Record<string, string>) =>
      sendRequest(`${dev.url}${path}`, { headers: { host: `localhost:${dev.port}`, ...headers } });
    for (const path of ["/__platform/logs", "/__platform/export"]) {
      for (const headers of [
        { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" },
        { "sec-fetch-site": "cross-site", referer: "https://evil.example/page.html" },
        { "sec-fetch-site": "cross-site", referer: "not a url" },
      ]) {
        const refused = await fetchDev(path, headers);
        expect(refused.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(refused.json<{ error: { code: string } }>().error.code).toBe("forbidden");
      }
      // A page of this machine on another name (127.0.0.1 is another site to localhost), a
      // same-site page, and scripts are answered.
      for (const headers of [
        {},
        { "sec-fetch-site": "same-origin" },
        { "sec-fetch-site": "same-site" },
        { "sec-fetch-site": "cross-site", referer: "http://127.0.0.1:5173/" },
      ])
        expect((await fetchDev(path, headers)).status, `${path} ${JSON.stringify(headers)}`).toBe(200);
    }
  });

  it("answers pages of localhost, *.localhost and 127.0.0.0/8 on any port, and scripts that send no Origin", async () => {
    for (const origin of [
      undefined,
      `http://localhost:${dev.port}`,
      "http://localhost:5173",
      "http://dashboard.localhost:3000",
      "https://127.0.0.1:8443",
      "http://[::1]:3000",
    ]) {
      expect(await open(origin), String(origin)).toBe("open");
      expect((await post(origin)).status, String(origin)).toBe(200);
    }
  });
});

describe("malformed percent-escapes are 400", () => {
  it("on the control plane, a deployment and platform dev, in every route", async () => {
    const cases: [string, string, number, string][] = [
      [host.url, "/%E0%A4%A", 400, "bad_request"],
      [host.url, "/v1/deploys/%ZZ", 400, "bad_request"],
      [host.url, "/deploys/%E0%A4/storage", 400, "bad_request"],
      [host.url, "/dashboard/login%", 400, "bad_request"],
      [host.deploymentUrl("cookies"), "/%E0%A4%A", 400, "bad_request"],
      [host.deploymentUrl("cookies"), "/api/query/%", 400, "bad_request"],
      [host.deploymentUrl("cookies"), "/storage/public/%ZZ", 400, "invalid_request"],
      [host.deploymentUrl("cookies"), "/storage/private/%C0%AF", 400, "invalid_request"],
      [dev.url, "/%E0%A4%A", 400, "bad_request"],
      [dev.url, "/storage/public/%ZZ", 400, "invalid_request"],
      [dev.url, "/api/query/%", 400, "bad_request"],
    ];
    for (const [base, path, status, code] of cases) {
      for (const method of ["GET", "POST", "DELETE"]) {
        const response = await sendRequest(`${base}${path}`, { method });
        expect(response.status, `${method} ${base}${path}`).toBe(status);
        const error = response.json<{ error: { code: string; message: string } }>().error;
        expect(error.code, `${method} ${path}`).toBe(code);
        expect(error.message).toContain("percent-escape");
      }
    }
  });

  it("well-formed escapes still reach their routes", async () => {
    const response = await sendRequest(`${dev.url}/api/query/%63ount`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).not.toBe(400);
    expect(response.status).not.toBe(500);
  });
});
