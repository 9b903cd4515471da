/**
 * Every limit of the platform, as data. Host, runtime, CLI and docs import this one object so a
 * number is never written twice. Values from SPEC.md "Limits" unless noted.
 */
export const LIMITS = {
  /** Rows handed back to one handler, all database calls together. */
  rowsReturned: 1000,
  /** Index entries scanned by one handler, including every `count()` match. */
  rowsRead: 5000,
  /** Row bytes read by one handler. */
  bytesRead: 4 * 1024 * 1024,
  /** Largest `numItems` of one `paginate()` call (ours: it can never exceed rowsReturned). */
  paginateMaxItems: 1000,
  /** One uploaded file. */
  fileSize: 5 * 1024 * 1024,
  /** Stored bytes per developer over all deployments. */
  storagePerDeveloper: 100 * 1024 * 1024,
  /** Newest files shown by the inspect route and `platform storage list`. */
  listingSize: 500,
  /** `Cache-Control: max-age` of public downloads on unrestricted apps. */
  publicCacheSeconds: 3600,
} as const;

/** The names of the per-handler read budgets. */
export type BudgetName = "rowsReturned" | "rowsRead" | "bytesRead";
