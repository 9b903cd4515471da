import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { AuthService } from "./auth-service.js";
import type { SessionRecord } from "./sessions.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

/** An account session as versions before account marks stored it: no mark beside it. */
const earlierSession = (deployment: string, email: string, incarnation: string): SessionRecord => ({
  deployment,
  session: `s-${email}`,
  userId: `user:${email}`,
  kind: "account",
  email,
  incarnation,
  createdAt: Date.now(),
});

it("finds accounts by their mark, and marks the sessions of earlier versions once", async () => {
  const auth = await AuthService.open(env.db, async () => "inc-1");
  const sessions = env.db.records<SessionRecord>("sessions");
  for (let i = 0; i < 1200; i++) {
    const record = earlierSession("app", `old${i}@example.com`, "inc-1");
    await sessions.put(`app/${record.session}`, record);
  }
  // Before the marking: found by looking at the sessions.
  expect(await auth.accountExists("app", "old1199@example.com")).toBe(true);
  expect(await auth.accountExists("app", "nobody@example.com")).toBe(false);
  // A marking stopped midway records nothing: misses still look at the sessions.
  await auth.markEarlierAccounts(() => true);
  const stray = earlierSession("app", "unmarked@example.com", "inc-1");
  await sessions.put(`app/${stray.session}`, stray);
  expect(await auth.accountExists("app", "unmarked@example.com")).toBe(true);
  await auth.markEarlierAccounts(() => false);
  expect(await auth.accountExists("app", "old0@example.com")).toBe(true);
  expect(await auth.accountExists("app", "old1199@example.com")).toBe(true);
  expect(await auth.accountExists("app", "unmarked@example.com")).toBe(true);
  // From now on an answer is the mark alone: a session written without one (no version writes
  // such any more) is not looked for.
  const unmarkedLater = earlierSession("app", "later@example.com", "inc-1");
  await sessions.put(`app/${unmarkedLater.session}`, unmarkedLater);
  expect(await auth.accountExists("app", "later@example.com")).toBe(false);
  // Another service on the same database (another host) sees the marking recorded.
  const again = await AuthService.open(env.db, async () => "inc-1");
  expect(await again.accountExists("app", "later@example.com")).toBe(false);
  expect(await again.accountExists("app", "old5@example.com")).toBe(true);
});

it("marks an account at its first sign-in, per incarnation, and forgets it with the deployment", async () => {
  let incarnation = "inc-1";
  const auth = await AuthService.open(env.db, async () => incarnation);
  await auth.markEarlierAccounts(() => false);
  expect(await auth.accountExists("app", "Ann@Example.com")).toBe(false);
  await auth.signInAccount("app", "Ann@Example.com");
  expect(await auth.accountExists("app", "ann@example.com")).toBe(true);
  expect(await auth.accountExists("other", "ann@example.com")).toBe(false);
  // The deployment deleted and created again under its id: ann has not signed in to this one.
  await auth.purgeDeployment("app");
  expect(await auth.accountExists("app", "ann@example.com")).toBe(false);
  incarnation = "inc-2";
  expect(await auth.accountExists("app", "ann@example.com")).toBe(false);
  await auth.signInAccount("app", "ann@example.com");
  expect(await auth.accountExists("app", "ann@example.com")).toBe(true);
  incarnation = "inc-3";
  expect(await auth.accountExists("app", "ann@example.com")).toBe(false);
});
