import type { CapsuleDeclaration } from "../../sdk/protocol/index.js";

/** A stored capsule bundle, immutable and addressed by the SHA-256 of its code. */
export interface ArtifactRecord {
  hash: string;
  code: string;
  apiVersion: number;
  size: number;
  createdAt: number;
}

/** One deployment: what it serves and its settings. */
export interface DeploymentRecord {
  id: string;
  artifact: string;
  declaration: CapsuleDeclaration;
  /** Server-only values for `ctx.env`; never returned by any route. */
  env: Record<string, string>;
  createdAt: number;
  updatedAt: number;
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
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
