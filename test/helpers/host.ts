import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect } from "vitest";
import { bundleCapsule } from "../../cli/bundle.js";
import { type HttpResponse, sendRequest } from "../../cli/http.js";
import { type HostOptions, type PlatformHost, startHost } from "../../host/host.js";
import { DEFAULT_INLINE_POLICY, type InlinePolicy } from "../../host/isolates/index.js";

/** A host on a free port with a temporary data folder; `dispose()` stops it and removes the data. */
export interface TestHost extends PlatformHost {
  adminToken: string;
  dir: string;
  logs: unknown[];
  dispose(): Promise<void>;
  deployFixture(id: string, fixture: string): Promise<HttpResponse>;
  deployCode(id: string, code: string, env?: Record<string, string>): Promise<HttpResponse>;
  call(id: string, kind: "query" | "mutation", name: string, args?: unknown): Promise<HttpResponse>;
  /** A control-plane request with the operator's token (or `token`), JSON body when given. */
  admin(path: string, method: string, body?: unknown, token?: string): Promise<HttpResponse>;
}

const bundles = new Map<string, string>();

/** Bundles `fixtures/<name>` once per test process. */
export async function fixtureCode(name: string): Promise<string> {
  let code = bundles.get(name);
  if (!code) {
    code = (await bundleCapsule(join("fixtures", name))).code;
    bundles.set(name, code);
  }
  return code;
}

/** Bundles a capsule whose `server/index.ts` is `source`, in a scratch folder removed afterwards. */
export async function sourceCode(source: string): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "platform-capsule-"));
  try {
    await mkdir(join(scratch, "server"), { recursive: true });
    await writeFile(join(scratch, "server", "index.ts"), source);
    return (await bundleCapsule(scratch)).code;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Declares `suite` twice: with handlers inline on the host's main thread (the default) and with
 * every handler on its isolate's own thread (where a demoted deployment runs). `inline` is the
 * policy to start its host with.
 */
export function describeOnBothTransports(suite: (inline: InlinePolicy) => void): void {
  for (const enabled of [true, false])
    describe(enabled ? "inline on the host's main thread" : "on the isolate's own thread", () =>
      suite({ ...DEFAULT_INLINE_POLICY, enabled }),
    );
}

/** Starts a real host for a test. */
export async function startTestHost(options: Partial<HostOptions> = {}): Promise<TestHost> {
  const dir = await mkdtemp(join(tmpdir(), "platform-host-"));
  const adminToken = randomBytes(16).toString("hex");
  const logs: unknown[] = [];
  const host = await startHost({
    data: dir,
    port: 0,
    domain: "localhost",
    adminToken,
    // Log lines as pino writes them (JSON), collected for assertions.
    logDestination: { write: (line: string) => logs.push(JSON.parse(line)) },
    ...options,
  });
  const admin = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const deployCode = (id: string, code: string, env?: Record<string, string>) =>
    sendRequest(`${host.url}/v1/deploys/${id}`, {
      method: "PUT",
      headers: admin,
      body: JSON.stringify({ code, env }),
    });
  return {
    ...host,
    adminToken,
    dir,
    logs,
    dispose: async () => {
      await host.close();
      await rm(dir, { recursive: true, force: true });
    },
    deployCode,
    deployFixture: async (id, fixture) => deployCode(id, await fixtureCode(fixture)),
    admin: (path, method, body, token = adminToken) =>
      sendRequest(`${host.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    call: (id, kind, name, args = {}) =>
      sendRequest(`${host.deploymentUrl(id)}/api/${kind}/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(args),
      }),
  };
}

/** The one-time sign-in code last written to `host`'s log for `email` (no SMTP in tests). */
export async function emailCode(host: TestHost, email: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const line = [...host.logs]
      .reverse()
      .find((l) => (l as { fields?: { email?: string } }).fields?.email === email) as
      | { fields: { code: string } }
      | undefined;
    if (line) return line.fields.code;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no sign-in code for ${email} in the host log`);
}

/**
 * Deploys fixture `fixture` as `id`, owned by a new developer, and returns an account session
 * token for `email` minted by the operator on `sessionHost` (another host on the same database, or
 * `host` itself).
 */
export async function deployOwnedWithSession(
  host: TestHost,
  id: string,
  fixture: string,
  email: string,
  sessionHost: TestHost = host,
): Promise<string> {
  const owner = (await host.admin("/v1/developers", "POST", { name: `${id}-owner` })).json<{ id: string }>();
  const deployed = await host.admin("/v1/deploys", "POST", {
    id,
    code: await fixtureCode(fixture),
    owner: owner.id,
  });
  expect(deployed.status).toBe(201);
  const session = await sessionHost.admin(`/v1/deploys/${id}/sessions`, "POST", { email });
  return session.json<{ token: string }>().token;
}
