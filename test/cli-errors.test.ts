/**
 * Errors a user can act on, from the built CLI against a real host on loopback: every command that
 * talks to a host prints the server's code and message (`error: <code>: <message>`), `--host`
 * works without a scheme, bad flag values are usage errors (exit 2) that say what to write, and a
 * busy port names the port and `--port`. (`platform host` stopping after repeated start-up
 * failures is in supervisor.test.ts.)
 */
import { chmodSync, mkdirSync } from "node:fs";
import { cp, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, runCliAsync } from "./helpers/cli.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let dir: string;
/** The control plane without a scheme, as users type it: `localhost:<port>`. */
let bare: string;
let ownerToken: string;
let accountToken: string;
const env = () => ({ PLATFORM_CONFIG_DIR: join(dir, "config") });
const NOT_VALID = "That token is not valid for this host.";

beforeAll(async () => {
  host = await startTestHost({ requestQuota: false });
  dir = await mkdtemp(join(tmpdir(), "platform-cli-errors-"));
  bare = `localhost:${host.port}`;
  await writeFile(join(dir, "page.html"), "<html><body>hi</body></html>");
  const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{ token: string }>();
  ownerToken = owner.token;
  const created = await host.admin(
    "/v1/deploys",
    "POST",
    { id: "todo", code: await fixtureCode("todo") },
    ownerToken,
  );
  expect(created.status, created.text()).toBe(201);
  const session = await host.admin("/v1/deploys/todo/sessions", "POST", { email: "a@example.com" });
  accountToken = session.json<{ token: string }>().token;
});
afterAll(async () => {
  await host.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** The CLI as a subprocess that does not block this process (the host runs in it). */
const platform = (args: string[], extra: Record<string, string> = {}) =>
  runCliAsync(args, { ...env(), ...extra });

describe("every command shows the server's code and message", () => {
  it("login: error: forbidden: That token is not valid for this host, then what to do", async () => {
    const refused = await platform(["login", "--host", bare, "--token", "pdt_wrong"]);
    expect([refused.status, refused.stderr.trim()]).toEqual([
      1,
      `error: forbidden: ${NOT_VALID} Ask the host's operator for a developer token (POST /v1/developers).`,
    ]);
  });

  it("deploy and logs: the control plane's forbidden and not_found", async () => {
    const deploy = await platform([
      "deploy",
      "fixtures/todo",
      "--host",
      bare,
      "--name",
      "todo",
      "--token",
      "pdt_wrong",
    ]);
    expect([deploy.status, deploy.stderr.trim()]).toEqual([1, `error: forbidden: ${NOT_VALID}`]);
    const logs = await platform(["logs", "todo", "--host", bare], { PLATFORM_TOKEN: "pdt_wrong" });
    expect([logs.status, logs.stderr.trim()]).toEqual([1, `error: forbidden: ${NOT_VALID}`]);
    const missing = await platform(["logs", "nope", "--host", bare], { PLATFORM_TOKEN: ownerToken });
    expect([missing.status, missing.stderr.trim()]).toEqual([
      1,
      "error: not_found: No deployment named nope.",
    ]);
  }, 60_000);

  it("storage put, get, list and delete: blocked_type, not_found, forbidden", async () => {
    const app = `todo.${bare}`;
    const blocked = await platform([
      "storage",
      "put",
      join(dir, "page.html"),
      "--deploy",
      app,
      "--token",
      accountToken,
    ]);
    expect(blocked.status).toBe(1);
    expect(blocked.stderr).toMatch(
      /^error: blocked_type: Files of type text\/html cannot be stored \(.+\)\.\n$/,
    );
    const missing = await platform(["storage", "get", "public/AAAAAAAAAAAAAAAAAAAAAA", "--deploy", app]);
    expect([missing.status, missing.stderr.trim()]).toEqual([1, "error: not_found: No such object."]);
    const list = await platform(["storage", "list", app, "--inspect-token", "pdt_wrong"]);
    expect(list.status).toBe(1);
    expect(list.stderr).toMatch(/^error: (forbidden|unauthorized): .+ Pass credentials: --token/);
    const remove = await platform(["storage", "delete", "public/AAAAAAAAAAAAAAAAAAAAAA", "--deploy", app], {
      PLATFORM_TOKEN: "pdt_wrong",
    });
    expect(remove.status).toBe(1);
    expect(remove.stderr).toMatch(new RegExp(`^error: forbidden: ${NOT_VALID.replace(".", "\\.")} Pass`));
  }, 60_000);
});

describe("--host without a scheme", () => {
  it("means http://, for login and for a deployment's URL", async () => {
    const login = await platform(["login", "--host", bare, "--token", ownerToken]);
    expect([login.status, login.stderr]).toEqual([0, ""]);
    expect(login.stdout).toMatch(new RegExp(`^logged in to http://localhost:${host.port} as dev_`));
    const listed = await platform(["storage", "list", `todo.${bare}`, "--json"], {
      PLATFORM_INSPECT_TOKEN: ownerToken,
    });
    expect([listed.status, listed.stderr]).toEqual([0, ""]);
    expect(JSON.parse(listed.stdout)).toMatchObject({ totals: { count: 0 } });
  });

  it("anything but an http(s) origin is a usage error that says what to write", () => {
    const ftp = runCli(["login", "--host", "ftp://example.com", "--token", "t"], env());
    expect(ftp.status).toBe(2);
    expect(ftp.stderr).toContain(
      "error: option '--host <url>' argument 'ftp://example.com' is invalid. Write the host's control plane URL, e.g. http://localhost:8080 (or localhost:8080).",
    );
    const path = runCli(["deploy", "fixtures/todo", "--host", "localhost:8080/v1"], env());
    expect(path.status).toBe(2);
    expect(path.stderr).toContain("Write only the origin, without a path: http://localhost:8080");
  });
});

describe("bad flag values are usage errors: exit 2, saying what to write", () => {
  it.each([
    [
      ["dev", "fixtures/todo", "--port", "abc"],
      "'--port <port>' argument 'abc' is invalid. A port is a whole number",
    ],
    [["host", "--port", "70000"], "'--port <port>' argument '70000' is invalid. A port is a whole number"],
    [["logs", "--port", "3000x"], "'--port <port>' argument '3000x' is invalid"],
    [["storage", "list", "--port", "-1"], "'--port <port>' argument '-1' is invalid"],
    [["host", "--request-quota", "lots"], "Write a number of requests per second (0 turns quotas off)."],
    [["host", "--database", "mysql://db/x"], "Write a postgres:// URL"],
    [["host", "--isolate-nice", "25"], "Write a whole number from 0 (off) to 19, e.g. 10."],
    [["host", "--isolate-memory", "100"], "Write a whole number of MiB, 256 or more, e.g. 8192."],
    [["host", "--quarantine", "0"], "Write a whole number of seconds from 1 to 600, e.g. 5."],
    [["host", "--quarantine", "1.5"], "Write a whole number of seconds from 1 to 600, e.g. 5."],
    [
      ["host", "--main-thread-raise", "-3"],
      "Write a whole number from 0 (leave the main thread at the host's priority) to 19, e.g. 5.",
    ],
    [["host", "--s3-region", "eu-west-1"], "error: --s3-endpoint and --s3-region need --s3-bucket."],
    [
      ["deploy", "fixtures/todo", "--host", "localhost:8080", "--name", "Bad_Name"],
      "'--name <id>' argument 'Bad_Name' is invalid. A deployment id is 1-63 lowercase letters",
    ],
    [
      ["logs", "--host", "localhost:8080"],
      "--host needs the deployment's id: platform logs <deploy_id> --host <url> (without an id, the command talks to the dev server).",
    ],
    [
      ["export", "--host", "localhost:8080", "--out", "x.zip"],
      "--host needs the deployment's id: platform export <deploy_id>",
    ],
  ])("platform %j", (args, message) => {
    const result = runCli(args, env());
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it.each([
    ["not json", "PLATFORM_OIDC_ISSUERS must be JSON"],
    [
      JSON.stringify([
        { issuer: "https://idp.example", jwksUri: "https://idp.example/jwks", audience: "app" },
      ]),
      'PLATFORM_OIDC_ISSUERS entry 0 needs "deployments": the ids of the deployments whose app uses client "app"',
    ],
    [
      JSON.stringify([{ issuer: "https://idp.example", jwksUri: "jwks", audience: "app", deployments: "*" }]),
      'PLATFORM_OIDC_ISSUERS entry 0 needs "jwksUri": the issuer\'s JWKS URL, over https',
    ],
    [
      JSON.stringify([
        {
          issuer: "https://idp.example",
          jwksUri: "http://idp.example/jwks",
          audience: "app",
          deployments: "*",
        },
      ]),
      "(http only to this machine, for a local identity provider: whoever can change a JWKS on its way can sign in as anyone)",
    ],
  ])("platform host with PLATFORM_OIDC_ISSUERS=%s", (issuers, message) => {
    const result = runCli(["host", "--data", join(dir, "never")], {
      ...env(),
      PLATFORM_ADMIN_TOKEN: "cli-errors-admin-token",
      PLATFORM_OIDC_ISSUERS: issuers,
    });
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain(message);
  });
});

describe("a damaged config file", () => {
  it("platform auth as names the file and what to do, as other commands do", async () => {
    const config = join(dir, "damaged-config");
    mkdirSync(config);
    await writeFile(join(config, "config.json"), '{"logins":');
    const result = runCli(["auth", "as", "alice"], { PLATFORM_CONFIG_DIR: config });
    expect([result.status, result.stderr.trim()]).toEqual([
      1,
      `error: bad_request: The CLI's config file ${join(config, "config.json")} is not a JSON object (damaged or cut short). Fix it, or delete it and run platform login again.`,
    ]);
  });
});

describe("a busy port", () => {
  let busy: Server;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(port, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  const inUse = () =>
    `error: unavailable: Port ${port} is in use (127.0.0.1:${port}): another server is listening there. Stop it, or pick another port with --port <n>.`;

  it("platform dev names the port and --port", async () => {
    const dev = await platform(["dev", "fixtures/todo", "--port", String(port)]);
    expect([dev.status, dev.stderr.trim()]).toEqual([1, inUse()]);
  }, 60_000);

  it("platform host names the port and --port", async () => {
    const hosted = await platform(["host", "--port", String(port), "--data", join(dir, "data")], {
      PLATFORM_ADMIN_TOKEN: "cli-errors-admin-token",
    });
    expect([hosted.status, hosted.stderr.trim()]).toEqual([1, inUse()]);
  }, 60_000);

  it("platform host warns about an operator token short enough to guess", async () => {
    const hosted = await platform(["host", "--port", String(port), "--data", join(dir, "data")], {
      PLATFORM_ADMIN_TOKEN: "secret",
    });
    expect(hosted.stderr).toContain(
      "warning: PLATFORM_ADMIN_TOKEN is 6 characters: use a long random one (openssl rand -hex 32)",
    );
  }, 60_000);

  it("platform host warns when other users may open its data folder", async () => {
    const shared = join(dir, "shared-data");
    mkdirSync(shared);
    chmodSync(shared, 0o755);
    const hosted = await platform(["host", "--port", String(port), "--data", shared], {
      PLATFORM_ADMIN_TOKEN: "cli-errors-admin-token",
    });
    expect(hosted.stderr).toContain(
      `warning: the data folder ${shared} can be opened by other users of this machine (mode 755); it holds every tenant's data: run chmod 700 ${shared}`,
    );
    expect(hosted.stderr.trim().endsWith(inUse())).toBe(true);
  }, 60_000);

  it("platform dev warns that a client/ linking out of the project is not served", async () => {
    const app = join(dir, "linked-client");
    await cp("fixtures/todo", app, { recursive: true });
    await rm(join(app, "client"), { recursive: true, force: true });
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    await symlink(elsewhere, join(app, "client"));
    const dev = await platform(["dev", app, "--port", String(port)]);
    expect(dev.stderr).toContain(
      `warning: client/ is not served: it is a symbolic link to ${await realpath(elsewhere)}, outside the project or into a dot-folder of it.`,
    );
  }, 60_000);

  it("platform dev warns when other users may open the folder of --data", async () => {
    const shared = join(dir, "shared-dev-data");
    mkdirSync(shared);
    chmodSync(shared, 0o755);
    const dev = await platform(["dev", "fixtures/todo", "--port", String(port), "--data", shared]);
    expect(dev.stderr).toContain(
      `warning: the data folder ${shared} can be opened by other users of this machine (mode 755); it holds every tenant's data: run chmod 700 ${shared}`,
    );
  }, 60_000);
});
