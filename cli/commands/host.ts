import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import type { HostOptions } from "../../host/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { runAction } from "../output.js";

interface HostFlags {
  port: string;
  data: string;
  domain: string;
  hostname: string;
  requestQuota?: string;
  database?: string;
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
}

/**
 * Where data lives: `--database postgres://...` (else embedded under --data), and
 * `--s3-bucket` (+ `--s3-endpoint`, `--s3-region`; credentials from AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, or the AWS SDK's other usual sources) for object bytes.
 */
function backends(flags: HostFlags): Pick<HostOptions, "database" | "s3"> {
  const out: Pick<HostOptions, "database" | "s3"> = {};
  if (flags.database !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(flags.database))
      throw new Error(
        "--database must be a postgres:// URL (without it the database is embedded under --data).",
      );
    out.database = flags.database;
  }
  if (flags.s3Endpoint !== undefined || flags.s3Region !== undefined) {
    if (flags.s3Bucket === undefined) throw new Error("--s3-endpoint and --s3-region need --s3-bucket.");
  }
  if (flags.s3Bucket !== undefined) {
    out.s3 = {
      bucket: flags.s3Bucket,
      ...(flags.s3Endpoint ? { endpoint: flags.s3Endpoint } : {}),
      ...(flags.s3Region ? { region: flags.s3Region } : {}),
    };
  }
  return out;
}

/** A quota's burst per request per second, as in the default quota of {@link LIMITS}. */
const BURST_PER_RATE = LIMITS.requestQuotaBurst / LIMITS.requestQuotaPerSecond;

/** `--request-quota <n>`: n requests per second per caller with bursts of {@link BURST_PER_RATE} times n; 0 turns it off. */
function requestQuota(flag: string | undefined): Pick<HostOptions, "requestQuota"> {
  if (flag === undefined) return {};
  const perSecond = Number(flag);
  if (!Number.isFinite(perSecond) || perSecond < 0)
    throw new Error("--request-quota must be a number of requests per second (0 turns quotas off).");
  return { requestQuota: perSecond === 0 ? false : { perSecond, burst: perSecond * BURST_PER_RATE } };
}

/** The operator token: `PLATFORM_ADMIN_TOKEN`, else one generated once and kept in the data folder. */
function adminToken(data: string): { token: string; generated: boolean } {
  const fromEnv = process.env.PLATFORM_ADMIN_TOKEN;
  if (fromEnv) return { token: fromEnv, generated: false };
  const file = join(data, "admin-token");
  if (existsSync(file)) return { token: readFileSync(file, "utf8").trim(), generated: false };
  mkdirSync(data, { recursive: true });
  const token = randomBytes(24).toString("base64url");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}

/**
 * Sign-in settings from the environment: `PLATFORM_SMTP_URL` and `PLATFORM_EMAIL_FROM` for email
 * codes, `PLATFORM_OIDC_ISSUERS` as JSON `[{ "issuer", "jwksUri", "audience" }]`.
 */
function signInSettings(): Pick<HostOptions, "smtpUrl" | "emailFrom" | "oidcIssuers"> {
  const settings: Pick<HostOptions, "smtpUrl" | "emailFrom" | "oidcIssuers"> = {};
  if (process.env.PLATFORM_SMTP_URL) settings.smtpUrl = process.env.PLATFORM_SMTP_URL;
  if (process.env.PLATFORM_EMAIL_FROM) settings.emailFrom = process.env.PLATFORM_EMAIL_FROM;
  if (process.env.PLATFORM_OIDC_ISSUERS) {
    try {
      settings.oidcIssuers = JSON.parse(process.env.PLATFORM_OIDC_ISSUERS) as HostOptions["oidcIssuers"] &
        object;
    } catch {
      throw new Error(
        'PLATFORM_OIDC_ISSUERS must be JSON: [{"issuer": ..., "jwksUri": ..., "audience": ...}]',
      );
    }
  }
  return settings;
}

async function serve(flags: HostFlags): Promise<void> {
  const { startHost } = await import("../../host/index.js");
  const data = resolve(flags.data);
  const { token } = adminToken(data);
  const host = await startHost({
    data,
    port: Number(flags.port),
    domain: flags.domain,
    hostname: flags.hostname,
    adminToken: token,
    ...requestQuota(flags.requestQuota),
    ...backends(flags),
    ...signInSettings(),
  });
  process.stdout.write(
    `platform host listening: control plane ${host.url}, deployments at http://<id>.${flags.domain}:${host.port}\n`,
  );
  const stop = async () => {
    await host.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

/**
 * Runs the server in a child process and starts a new one whenever it dies (a catastrophic V8
 * error in one isolate can take a process down; commits are atomic, so nothing acknowledged is
 * lost). Backs off from 200 ms to 5 s while the server keeps failing quickly.
 */
function supervise(flags: HostFlags): void {
  const data = resolve(flags.data);
  const { token, generated } = adminToken(data);
  if (generated)
    process.stdout.write(`Generated an operator token (kept in ${join(data, "admin-token")}):\n  ${token}\n`);
  let child: ReturnType<typeof spawn> | undefined;
  let stopping = false;
  let delay = 200;
  const start = () => {
    const startedAt = Date.now();
    child = spawn(
      process.execPath,
      [...process.execArgv, process.argv[1] as string, ...process.argv.slice(2)],
      {
        stdio: "inherit",
        env: { ...process.env, PLATFORM_HOST_CHILD: "1", PLATFORM_ADMIN_TOKEN: token },
      },
    );
    child.on("exit", (code, signal) => {
      if (stopping) process.exit(0);
      if (Date.now() - startedAt > 30_000) delay = 200;
      process.stderr.write(
        `platform host: server exited (${signal ?? `code ${code}`}); restarting in ${delay} ms\n`,
      );
      setTimeout(start, delay);
      delay = Math.min(delay * 2, 5000);
    });
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      stopping = true;
      if (child && child.exitCode === null) child.kill(signal);
      else process.exit(0);
    });
  }
  start();
}

/** `platform host`: the multi-tenant host, supervised. */
export function registerHost(program: Command): void {
  program
    .command("host")
    .description(
      "run the multi-tenant host: control plane at http://<domain>:<port>, deployments at http://<id>.<domain>:<port>",
    )
    .option("--port <port>", "port to listen on", "8080")
    .option("--data <dir>", "data folder (database, operator token)", "./data")
    .option("--domain <domain>", "domain the deployments live under", "localhost")
    .option("--hostname <address>", "address to bind", "127.0.0.1")
    .option("--database <url>", "a postgres:// URL: the database in PostgreSQL, shared with other hosts")
    .option(
      "--s3-bucket <name>",
      "keep uploaded files in this S3 (or S3-protocol) bucket instead of under --data",
    )
    .option("--s3-endpoint <url>", "the S3-protocol server (default: AWS); path-style URLs")
    .option("--s3-region <region>", "the bucket's region (default us-east-1)")
    .option(
      "--request-quota <n>",
      `requests per second per caller and deployment, bursts of ${BURST_PER_RATE}n (default ${LIMITS.requestQuotaPerSecond}; 0 turns quotas off)`,
    )
    .addHelpText(
      "after",
      "\nExamples:\n  PLATFORM_ADMIN_TOKEN=secret platform host --port 8080 --data ./data\n  curl -H 'Authorization: Bearer secret' http://localhost:8080/v1/deploys\n  platform host --port 8081 --database postgres://platform@db:5432/platform --s3-bucket files --s3-endpoint http://minio:9000",
    )
    .action((flags: HostFlags) =>
      runAction(async () => {
        // Bad values are refused before the supervisor starts anything.
        requestQuota(flags.requestQuota);
        backends(flags);
        if (process.env.PLATFORM_HOST_CHILD === "1") await serve(flags);
        else supervise(flags);
      }),
    );
}
