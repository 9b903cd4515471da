import type { BridgeIdentity, DispatchRequest } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { type HostDatabase, refusedForLostLock, type Transaction } from "../db/index.js";
import {
  type HandlerLogEntry,
  type IsolatePool,
  retryAbandoned,
  transactionSyscalls,
} from "../isolates/index.js";
import { handlerError, nextSeed } from "./dispatch.js";
import type { LogHub } from "./log-hub.js";
import { quarantine } from "./quarantine.js";
import type { DeploymentRecord } from "./records.js";

/** The guest's session record that an upgrade retires, and how to tell it was retired already. */
export interface GuestRetirement {
  record: { key: Buffer; value: string };
  isRetired: () => Promise<boolean>;
}

/**
 * Moves every `userId()` field equal to the guest's id (found by index) to the account, within
 * one mutation's write budget (see reassignUserId); beyond it the upgrade fails and says why.
 */
async function moveUserIds(
  tx: Transaction,
  record: DeploymentRecord,
  guestUserId: string,
  accountUserId: string,
): Promise<number> {
  let moved = 0;
  try {
    for (const [table, spec] of Object.entries(record.declaration.schema.tables)) {
      for (const [field, fieldSpec] of Object.entries(spec.fields)) {
        if (fieldSpec.kind === "userId")
          moved += await tx.reassignUserId(table, field, guestUserId, accountUserId);
      }
    }
  } catch (error) {
    if (!isPlatformError(error) || error.code !== "limit_exceeded") throw error;
    // Out of index scans: only a schema stored before the cap on userId() fields gets here.
    if (tx.budget.usage.rangesRead >= tx.budget.limits.rangesRead)
      throw new PlatformError(
        "limit_exceeded",
        `Guest upgrade failed: the schema has more userId() fields than one transaction may search (${error.message}). Nothing moved: deploy a schema with at most 256 userId() fields, then sign in again.`,
      );
    throw new PlatformError(
      "limit_exceeded",
      `Guest upgrade failed: the guest's rows are more than one transaction may write (${error.message}). ` +
        "Nothing moved and the guest keeps its rows: delete some of them as the guest, then sign in again.",
    );
  }
  return moved;
}

/**
 * Upgrades a guest to an account in ONE transaction: every `userId()` field equal to the guest's
 * id moves to the account, `auth.onGuestUpgrade` runs, and the guest's session is retired in the
 * same batch. If anything throws nothing changes and the upgrade stays pending for the next
 * sign-in. Two sign-ins of one guest upgrade once (the second sees it retired).
 */
export async function upgradeGuest(
  parts: { db: HostDatabase; pool: IsolatePool; logs: LogHub },
  record: DeploymentRecord,
  guestUserId: string,
  account: BridgeIdentity,
  retirement: GuestRetirement,
): Promise<{ upgraded: boolean; moved: number }> {
  const { db, pool, logs } = parts;
  // The hook is the deployment's code: refused as its calls are while it is quarantined.
  if (record.declaration.auth.hasGuestUpgradeHook) quarantine.check(record);
  const database = await db.deployment(record.id);
  const runner = pool.runner(record.id, record.artifact, record.owner);
  const now = Date.now();
  const sink = logs.sink(record.id, "auth.onGuestUpgrade", "upgrade", record.env);
  const upgrade = (log: (entry: HandlerLogEntry) => void) =>
    database.mutate(
      async (tx) => {
        if (await retirement.isRetired()) return { upgraded: false, moved: 0 };
        const moved = await moveUserIds(tx, record, guestUserId, account.userId);
        if (record.declaration.auth.hasGuestUpgradeHook) {
          const request: DispatchRequest = {
            kind: "guestUpgrade",
            requestId: 0,
            guestUserId,
            userId: account.userId,
            identity: account,
            env: record.env,
            now,
            seed: nextSeed(),
          };
          const response = await runner.run(request, transactionSyscalls(tx, log));
          if (!response.ok) {
            const failed = handlerError(response.error, record.env);
            throw new PlatformError(failed.code, `Guest upgrade failed: ${failed.message}`);
          }
        }
        tx.writeRecord(retirement.record.key, retirement.record.value);
        return { upgraded: true, moved };
      },
      // Moved, and the hook run, on this incarnation's data only (see host/db/incarnation.ts).
      { handler: "auth.onGuestUpgrade", now, incarnation: record.incarnation ?? null },
    );
  // Refused for a lost write lock, nothing was written: it runs again under the lock taken anew.
  return (await retryAbandoned(sink, upgrade, refusedForLostLock)).value;
}
