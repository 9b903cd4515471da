import type { CapsuleDeclaration } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** A stored capsule bundle, immutable and addressed by the SHA-256 of its code. */
export interface ArtifactRecord {
  hash: string;
  code: string;
  apiVersion: number;
  size: number;
  createdAt: number;
}

/**
 * The web client a deployment serves at its origin (served from `client-files.ts`): the hash of its
 * stored manifest, and its file count and bytes for the operator API.
 */
export interface ClientRef {
  manifest: string;
  files: number;
  bytes: number;
}

/** One deployment: what it serves and its settings. */
export interface DeploymentRecord {
  id: string;
  artifact: string;
  declaration: CapsuleDeclaration;
  /** The deployed web client (`client/` and its build); absent when the last deploy sent none. */
  client?: ClientRef;
  /** Server-only values for `ctx.env`; never returned by any route. */
  env: Record<string, string>;
  /**
   * Random id of this incarnation, set when the deployment is created and kept by redeploys; every
   * app token carries it, so a token of a deleted deployment is refused by a new one with the same
   * id. Absent on deployments created before incarnations existed: their tokens carry none.
   */
  incarnation?: string;
  /** The developer who owns it; null while unclaimed. */
  owner: string | null;
  /** SHA-256 of the claim token of an unclaimed deployment (the token is shown once). */
  claimTokenHash?: string;
  /** Restricted deployments admit only approved accounts. */
  restricted: boolean;
  /** Emails of the approved accounts (lower case). */
  approved: string[];
  createdAt: number;
  updatedAt: number;
}

/**
 * The marker of a deletion in progress, written in the same batch that removes the deployment's
 * record: until it is gone, the id cannot be reused, and a restarted host finishes the removal.
 */
export interface RemovalRecord {
  id: string;
  incarnation: string | null;
  owner: string | null;
  /** Whose storage quota its objects counted against (see {@link storageQuotaOwner}). */
  quotaOwner: string;
  startedAt: number;
}

/** Whose storage quota a deployment's uploads count against: its owner, `dev:<id>` while unclaimed. */
export function storageQuotaOwner(record: DeploymentRecord): string {
  return record.owner ?? `dev:${record.id}`;
}

/** What the operator API shows of a deployment (no env values). */
export function publicView(record: DeploymentRecord) {
  return {
    id: record.id,
    artifact: record.artifact,
    apiVersion: record.declaration.apiVersion,
    queries: record.declaration.queries,
    mutations: record.declaration.mutations,
    endpoints: record.declaration.endpoints,
    tables: Object.keys(record.declaration.schema.tables),
    envKeys: Object.keys(record.env).length,
    /** The names of the server-only env variables (never their values), for the settings page. */
    envNames: Object.keys(record.env).sort(),
    client: record.client ? { files: record.client.files, bytes: record.client.bytes } : null,
    owner: record.owner,
    claimed: record.owner !== null,
    restricted: record.restricted,
    approved: record.approved,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/**
 * A deployment as a listing for people shows it (`GET /v1/deploys?view=summary`, the dashboard's
 * first page): none of what its developer declares (handler names, env names, approved emails,
 * up to megabytes each), which the operator's page downloaded and parsed for every deployment of
 * every developer at each load (an attack review).
 */
export function summaryView(record: DeploymentRecord) {
  return {
    id: record.id,
    apiVersion: record.declaration.apiVersion,
    owner: record.owner,
    claimed: record.owner !== null,
    restricted: record.restricted,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

const DEPLOYMENT_ID = /^[a-z][a-z0-9-]{0,62}$/;

/** Whether `id` is a well-formed deployment id (see {@link checkDeploymentId}). */
export function isDeploymentId(id: unknown): id is string {
  return typeof id === "string" && DEPLOYMENT_ID.test(id) && !id.endsWith("-");
}

/** Checks a deployment id: it becomes a DNS label (`<id>.<domain>`). */
export function checkDeploymentId(id: unknown): string {
  if (!isDeploymentId(id)) {
    throw new PlatformError(
      "bad_request",
      "A deployment id is 1-63 lowercase letters, digits or '-', starting with a letter.",
    );
  }
  return id;
}
