import { InvalidArgumentError } from "commander";
import { checkOidcIssuers } from "../../host/auth/oidc.js";
import type { HostOptions } from "../../host/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";

/** The flags of `platform host`, as commander parses them. */
export interface HostFlags {
  port: number;
  data: string;
  domain: string;
  hostname: string;
  requestQuota?: HostOptions["requestQuota"];
  database?: string;
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
  metricsPort?: number;
  isolateNice?: number;
  /** `--isolate-memory`: the live isolates' heaps together, in bytes. */
  isolateMemory?: number;
  mainThreadRaise?: number;
  trustProxy?: boolean;
  /** The first quarantine of code that crashed the server (ms). */
  quarantine?: number;
}

/**
 * Where data lives: `--database postgres://...` (else embedded under --data), and
 * `--s3-bucket` (+ `--s3-endpoint`, `--s3-region`; credentials from AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, or the AWS SDK's other usual sources) for object bytes.
 */
export function backends(flags: HostFlags): Pick<HostOptions, "database" | "s3"> {
  const out: Pick<HostOptions, "database" | "s3"> = {};
  if (flags.database !== undefined) out.database = flags.database;
  if (flags.s3Endpoint !== undefined || flags.s3Region !== undefined) {
    if (flags.s3Bucket === undefined)
      throw new InvalidArgumentError("--s3-endpoint and --s3-region need --s3-bucket.");
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
export const BURST_PER_RATE = LIMITS.requestQuotaBurst / LIMITS.requestQuotaPerSecond;

/** `--request-quota <n>`: n requests per second per caller with bursts of {@link BURST_PER_RATE} times n; 0 turns it off. */
export function parseRequestQuota(flag: string): HostOptions["requestQuota"] {
  const perSecond = flag.trim() === "" ? Number.NaN : Number(flag);
  if (!Number.isFinite(perSecond) || perSecond < 0)
    throw new InvalidArgumentError("Write a number of requests per second (0 turns quotas off).");
  return perSecond === 0 ? false : { perSecond, burst: perSecond * BURST_PER_RATE };
}

/** A parser of a flag taking a whole number from 0 to 19 (a nice value or steps of one), saying `hint` otherwise. */
function niceSteps(hint: string): (flag: string) => number {
  return (flag) => {
    const steps = flag.trim() === "" ? Number.NaN : Number(flag);
    if (!Number.isInteger(steps) || steps < 0 || steps > 19) throw new InvalidArgumentError(hint);
    return steps;
  };
}

/** `--isolate-memory <MiB>`: the live isolates' heaps together, at least 256 MiB; bytes. */
export function parseIsolateMemory(flag: string): number {
  const mib = flag.trim() === "" ? Number.NaN : Number(flag);
  if (!Number.isInteger(mib) || mib < 256)
    throw new InvalidArgumentError("Write a whole number of MiB, 256 or more, e.g. 8192.");
  return mib * 1024 * 1024;
}

/** `--isolate-nice`: 0 (off) to 19. */
export const parseIsolateNice = niceSteps("Write a whole number from 0 (off) to 19, e.g. 10.");

/** `--main-thread-raise`: 0 (off) to 19. */
export const parseMainThreadRaise = niceSteps(
  `Write a whole number from 0 (leave the main thread at the host's priority) to 19, e.g. ${LIMITS.mainThreadNiceRaise}.`,
);

/** `--quarantine <seconds>`: the first quarantine's length, 1 up to the cap of a doubled one. */
export function parseQuarantine(flag: string): number {
  const seconds = flag.trim() === "" ? Number.NaN : Number(flag);
  const most = LIMITS.quarantineMaxMs / 1000;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > most)
    throw new InvalidArgumentError(
      `Write a whole number of seconds from 1 to ${most}, e.g. ${LIMITS.quarantineFirstMs / 1000}.`,
    );
  return seconds * 1000;
}

/** `--database`: a PostgreSQL URL (without the flag the database is embedded under --data). */
export function parseDatabaseUrl(flag: string): string {
  if (!/^postgres(ql)?:\/\//.test(flag))
    throw new InvalidArgumentError(
      "Write a postgres:// URL, e.g. postgres://platform@db:5432/platform (without --database the database is embedded under --data).",
    );
  return flag;
}

/**
 * Sign-in settings from the environment: `PLATFORM_SMTP_URL` and `PLATFORM_EMAIL_FROM` for email
 * codes, `PLATFORM_OIDC_ISSUERS` as JSON `[{ "issuer", "jwksUri", "audience", "deployments" }]`
 * (checked here, so a wrong one is a usage error before anything starts).
 */
export function signInSettings(): Pick<HostOptions, "smtpUrl" | "emailFrom" | "oidcIssuers"> {
  const settings: Pick<HostOptions, "smtpUrl" | "emailFrom" | "oidcIssuers"> = {};
  if (process.env.PLATFORM_SMTP_URL) settings.smtpUrl = process.env.PLATFORM_SMTP_URL;
  if (process.env.PLATFORM_EMAIL_FROM) settings.emailFrom = process.env.PLATFORM_EMAIL_FROM;
  if (process.env.PLATFORM_OIDC_ISSUERS) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(process.env.PLATFORM_OIDC_ISSUERS);
    } catch {
      throw new InvalidArgumentError(
        'PLATFORM_OIDC_ISSUERS must be JSON: [{"issuer": ..., "jwksUri": ..., "audience": ..., "deployments": [...] or "*"}]',
      );
    }
    try {
      settings.oidcIssuers = checkOidcIssuers(parsed, "PLATFORM_OIDC_ISSUERS");
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  }
  return settings;
}
