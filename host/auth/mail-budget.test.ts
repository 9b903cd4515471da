import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { MailBudget } from "./mail-budget.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

it("counts every host's mails to a mailbox: hosts racing let one more through each, no more", async () => {
  // Two budgets on one store stand for two hosts of one database: each locks only in its process.
  // Both read the one record and wrote it back, each without the other's mail: two hosts asked
  // at once were granted twice the mails.
  const hosts = [new MailBudget(env.db), new MailBudget(env.db)];
  let granted = 0;
  for (let round = 0; round < LIMITS.emailCodeMailsPerAddress; round++) {
    const waits = await Promise.all(hosts.map((budget) => budget.take("victim@example.com", "net")));
    granted += waits.filter((wait) => wait === 0).length;
  }
  expect(granted).toBeGreaterThanOrEqual(LIMITS.emailCodeMailsPerAddress);
  expect(granted).toBeLessThanOrEqual(LIMITS.emailCodeMailsPerAddress + hosts.length - 1);
  // A third host, asking afterwards, sees them all.
  expect(await new MailBudget(env.db).take("victim@example.com", "net")).toBeGreaterThan(0);
  // Another network's budget is its own.
  expect(await hosts[0]?.take("victim@example.com", "elsewhere")).toBe(0);
});

it("forgets a mailbox's mails once they all left the window", async () => {
  const budget = new MailBudget(env.db);
  const start = Date.now();
  for (let i = 0; i < LIMITS.emailCodeMailsPerAddress; i++)
    expect(await budget.take("m@example.com", "net", start)).toBe(0);
  expect(await budget.take("m@example.com", "net", start)).toBeGreaterThan(0);
  const later = start + LIMITS.emailCodeWindowSeconds * 1000 + 1;
  expect(await budget.sweep(later)).toBe(1);
  expect(await budget.take("m@example.com", "net", later)).toBe(0);
});

it("counts the mails in the one record versions before kept", async () => {
  const now = Date.now();
  const sentAt = Array.from({ length: LIMITS.emailCodeMailsPerAddress }, (_, i) => now - i);
  await env.db.records<{ sentAt: number[] }>("email-mails").put("old@example.com\u0000net", { sentAt });
  expect(await new MailBudget(env.db).take("old@example.com", "net", now)).toBeGreaterThan(0);
});
