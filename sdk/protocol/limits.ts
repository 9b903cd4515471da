import { AUTH_LIMITS } from "./limits/auth.js";
import { CLI_LIMITS } from "./limits/cli.js";
import { DASHBOARD_LIMITS } from "./limits/dashboard.js";
import { DATABASE_LIMITS } from "./limits/database.js";
import { DEPLOY_LIMITS } from "./limits/deploys.js";
import { EXECUTION_LIMITS } from "./limits/execution.js";
import { HOST_LIMITS } from "./limits/host.js";
import { IMPORT_EXPORT_LIMITS } from "./limits/import-export.js";
import { LIVE_QUERY_LIMITS } from "./limits/live-queries.js";
import { LOG_LIMITS } from "./limits/logs.js";
import { REQUEST_LIMITS } from "./limits/requests.js";
import { STORAGE_LIMITS } from "./limits/storage.js";

/**
 * Every limit of the platform, as data. Host, runtime, CLI and docs import this one object so a
 * number is never written twice. Values are the documented ones (docs/limits.md); "Ours" marks limits of this platform.
 * Each area's numbers, with their doc comments, are in limits/<area>.ts; this object is their union
 * and the only one to import: a test that changes a value for its run changes it here, where the
 * areas' objects do not see it.
 */
export const LIMITS = {
  // biome-ignore lint/plugin: built once, at load; spreads keep each number's literal type
  ...DATABASE_LIMITS,
  ...STORAGE_LIMITS,
  ...EXECUTION_LIMITS,
  ...REQUEST_LIMITS,
  ...AUTH_LIMITS,
  ...LOG_LIMITS,
  ...DEPLOY_LIMITS,
  ...LIVE_QUERY_LIMITS,
  ...HOST_LIMITS,
  ...IMPORT_EXPORT_LIMITS,
  ...DASHBOARD_LIMITS,
  ...CLI_LIMITS,
} as const;

/** The names of the per-handler read budgets. */
export type BudgetName = "rowsReturned" | "rowsRead" | "bytesRead" | "rangesRead" | "rangeBytesRead";
