/**
 * The JSON shapes of the dashboard's function runner and per-handler figures
 * (`/v1/deploys/<id>/functions`, `/run`, `/stats`, docs/http-api.md "Functions"): the host answers
 * them and the dashboard's bundle reads them, so both compile against these types.
 */
import type { EndpointDeclaration } from "./declaration.js";
import type { CallUsage } from "./usage.js";

/** The usage figures that have a per-call limit, and that limit (the rest are only counted). */
export type UsageLimits = Pick<CallUsage, "rowsReturned" | "rowsRead" | "bytesRead" | "cpuMs" | "wallMs">;

/** `GET /v1/deploys/<id>/functions`: every handler by name, and whether the caller may run them. */
export interface FunctionsAnswer {
  deployment: string;
  queries: string[];
  mutations: string[];
  endpoints: EndpointDeclaration[];
  /** The owner; the operator only on an unclaimed deployment (the data-editing rule). */
  runnable: boolean;
  limits: UsageLimits;
}

/** Who a run acts as: nobody, a guest `guest:<name>`, or an existing account of the deployment. */
export type RunIdentity =
  | { kind: "anonymous" }
  | { kind: "guest"; name?: string }
  | { kind: "account"; email: string };

/** `POST /v1/deploys/<id>/run`. */
export interface RunRequest {
  kind: "query" | "mutation";
  name: string;
  /** The handler's argument, any JSON value (default `{}`). */
  args?: unknown;
  as: RunIdentity;
}

/** What a run did: its value or its error (code and message, as a caller gets them) and its usage. */
export interface RunAnswer {
  outcome: "ok" | "error";
  value?: unknown;
  error?: { code: string; message: string };
  /** Null when the call was refused before it ran (access, quarantine). */
  usage: CallUsage | null;
  limits: UsageLimits;
  identity: { kind: "anonymous" | "guest" | "account"; userId: string | null; email?: string };
}

/** One minute of one handler. */
export interface MinuteFigures {
  /** Start of the minute, ms since the epoch. */
  minute: number;
  calls: number;
  failures: number;
  p50Ms: number;
  p99Ms: number;
  /** The largest share of any budget one call of that minute used (0..1, more past a limit). */
  maxShare: number;
}

/** One handler over the last hour: totals and per-minute figures (oldest first, calls only). */
export interface HandlerFigures {
  handler: string;
  kind: string;
  calls: number;
  failures: number;
  p50Ms: number;
  p99Ms: number;
  maxShare: number;
  minutes: MinuteFigures[];
}

/** `GET /v1/deploys/<id>/stats`: figures kept in memory by the host process that answers. */
export interface StatsAnswer {
  deployment: string;
  /** Start of the first minute covered, ms since the epoch. */
  since: number;
  now: number;
  handlers: HandlerFigures[];
}
