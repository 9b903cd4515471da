import type { AuthService, EmailCodes } from "./auth/index.js";
import type { HostDatabase } from "./db/index.js";
import type { DeploymentService } from "./deployments/index.js";
import { sweepExpiredDashboardSessions } from "./http/index.js";

/** How often a host deletes what ended: sessions, sign-in codes, dashboard sessions, unused bundles. */
const SWEEP_MS = 60 * 60_000;

/** When a host sweeps first after it starts: a host restarted more often than hourly sweeps too. */
const FIRST_SWEEP_MS = 5 * 60_000;

/** What a host's background upkeep works on. */
export interface UpkeepParts {
  db: HostDatabase;
  auth: AuthService;
  emailCodes: EmailCodes;
  deployments: DeploymentService;
}

/**
 * Starts a host's background upkeep: five minutes after it starts and then hourly, sessions whose tokens can no longer be used, email
 * codes that ended, expired dashboard sessions and bundles no deployment uses are deleted, so they
 * do not pile up; and once per database, sessions of versions before account marks get theirs.
 * Returns what stops it (waiting for the marking to notice).
 */
export function startUpkeep(parts: UpkeepParts): () => Promise<void> {
  const sweep = () =>
    void Promise.all([
      parts.auth.sweepEndedSessions(),
      parts.emailCodes.sweepEnded(),
      sweepExpiredDashboardSessions(parts.db),
      parts.deployments.sweepArtifacts(),
    ]).catch((error: unknown) =>
      console.error("Sweeping ended sessions, sign-in codes and unused bundles failed:", error),
    );
  const first = setTimeout(sweep, FIRST_SWEEP_MS).unref();
  const sweeps = setInterval(sweep, SWEEP_MS).unref();
  let closing = false;
  const marking = parts.auth
    .markEarlierAccounts(() => closing)
    .catch((error: unknown) => console.error("Marking the accounts of earlier sessions failed:", error));
  return async () => {
    closing = true;
    clearTimeout(first);
    clearInterval(sweeps);
    await marking;
  };
}
