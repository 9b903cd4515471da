import type { SchemaSpec } from "../values/index.js";

/**
 * The database API a capsule was built against. New artifacts are v1; 0 is the legacy snapshot
 * API of existing artifacts (docs/capsules.md "Versioning").
 */
export type DatabaseApiVersion = 0 | 1;

/** One custom HTTP endpoint as the host routes it. */
export interface EndpointDeclaration {
  name: string;
  method: string;
  path: string;
  readOnly: boolean;
}

/**
 * What the host learns about a capsule by evaluating its bundle: everything it needs to route
 * requests and migrate the database, as plain JSON. Handler code never leaves the isolate.
 */
export interface CapsuleDeclaration {
  apiVersion: DatabaseApiVersion;
  schema: SchemaSpec;
  queries: string[];
  mutations: string[];
  endpoints: EndpointDeclaration[];
  auth: { requireSignIn: boolean; hasGuestUpgradeHook: boolean };
}
