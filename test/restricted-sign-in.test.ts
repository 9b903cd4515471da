/**
 * A restricted deployment admits approved emails only, sign-in included: it gives no guest tokens,
 * and an outsider signing in with their own email (a guest token in hand or not) is refused before
 * the app's `onGuestUpgrade` runs and before any session is stored. An attack review found the
 * hook run, with its writes, for anyone who asked for a guest and signed in.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import type app from "../fixtures/guest-upgrade/server/index.js";
import type { SessionRecord, UnsentCode } from "../host/auth/index.js";
import { createClient, type FetchFunction, nodeFetch } from "../sdk/client/node.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const codes: UnsentCode[] = [];
const APPROVED = "member@club.example";
const OUTSIDER = "outsider@elsewhere.example";
const RESTRICTED = {
  status: 403,
  body: { error: { code: "forbidden", message: "This app is restricted to approved accounts." } },
};

beforeAll(async () => {
  host = await startTestHost({ onUnsentCode: (code) => codes.push(code) });
  expect((await host.deployFixture("club", "guest-upgrade")).status).toBe(201);
});
afterAll(() => host.dispose());

async function post(path: string, body: unknown = {}, token?: string) {
  const response = await sendRequest(`${host.deploymentUrl("club")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: response.json<Record<string, unknown>>() };
}

/** Email sign-in: a code requested, then verified with `guestToken` (if any) presented. */
async function signIn(email: string, guestToken?: string) {
  const started = await post("/__platform/auth/email/start", { email });
  expect(started.status).toBe(200);
  const code = codes.filter((each) => each.email === email).at(-1)?.code;
  return post("/__platform/auth/email/verify", { email, code, attempt: started.body.attempt }, guestToken);
}

/** The deployment's stored sessions, as the host keeps them. */
async function sessions(): Promise<SessionRecord[]> {
  const all: SessionRecord[] = [];
  for await (const page of host.deployments.db.records<SessionRecord>("sessions").entryPages())
    all.push(...page.map(([, record]) => record).filter((record) => record.deployment === "club"));
  return all;
}

it("runs no guest upgrade, and stores no session, for an email it does not approve", async () => {
  // A guest from before the deployment was restricted: the only kind there can be now.
  const guest = await post("/__platform/auth/guest");
  expect(guest.status).toBe(200);
  const restricted = await host.admin("/v1/deploys/club", "PATCH", {
    restricted: true,
    approved: [APPROVED],
  });
  expect(restricted.status, restricted.text()).toBe(200);

  // No new guests: refused before anything is stored.
  const before = (await sessions()).length;
  expect(await post("/__platform/auth/guest")).toEqual({
    status: 403,
    body: {
      error: {
        code: "forbidden",
        message:
          "This app is restricted to approved accounts: it gives no guest tokens; sign in with an approved account.",
      },
    },
  });
  expect(await sessions()).toHaveLength(before);
  expect((await post("/api/query/everything", {}, guest.body.token as string)).status).toBe(403);

  // The outsider proves their own email, presenting the guest: refused as their calls would be.
  expect(await signIn(OUTSIDER, guest.body.token as string)).toEqual(RESTRICTED);
  // Without a guest too: an email proved by its owner is refused, not signed in to a dead end.
  expect(await signIn(OUTSIDER)).toEqual(RESTRICTED);
  const stored = await sessions();
  expect(stored).toHaveLength(before);
  expect(stored.filter((record) => record.email === OUTSIDER)).toEqual([]);
  expect(await host.auth.accountExists("club", OUTSIDER)).toBe(false);
  // The guest was not retired: its token still speaks for it (and is refused as a guest).
  expect(await host.auth.authenticate("club", guest.body.token as string)).toMatchObject({ kind: "guest" });

  // The hook never ran: an approved member sees no merge.
  const member = await signIn(APPROVED);
  expect(member.status).toBe(200);
  const everything = await post("/api/query/everything", {}, member.body.token as string);
  expect(everything.status).toBe(200);
  expect((everything.body.value as { merges: unknown[] }).merges).toEqual([]);

  // An approved member's own guest from before still upgrades.
  const upgraded = await signIn(APPROVED, guest.body.token as string);
  expect(upgraded.status).toBe(200);
  expect(upgraded.body.upgradedFrom).toBe(guest.body.userId);
  const after = await post("/api/query/everything", {}, upgraded.body.token as string);
  expect((after.body.value as { merges: unknown[] }).merges).toEqual([
    [guest.body.userId, upgraded.body.userId],
  ]);
});

it("a client there starts no guest, says why, and signs an approved account in", async () => {
  // Restricted by the test before (it runs after it, in the same file).
  const client = createClient<typeof app>(host.deploymentUrl("club"));
  try {
    await client.auth.ready();
    expect(client.auth.getState()).toMatchObject({ identity: null, error: { code: "forbidden" } });
    await expect(client.query("everything")).rejects.toMatchObject({ code: "unauthorized" });
    await client.auth.startEmailSignIn(APPROVED);
    const code = codes.filter((each) => each.email === APPROVED).at(-1)?.code as string;
    expect(await client.auth.verifyEmailCode(APPROVED, code)).toMatchObject({ email: APPROVED });
    expect((await client.query("everything")).merges).toHaveLength(1);
  } finally {
    client.close();
  }
});

it("a client whose account session ended there shows it signed out, and renews it once", async () => {
  // With no guest to fall back on, the client kept the dead token, showed the account signed in,
  // and each call asked for a renewal and a guest again (a review).
  const asked: string[] = [];
  const counting: FetchFunction = (url, init) => {
    asked.push(new URL(url).pathname);
    return nodeFetch(url, init);
  };
  const client = createClient<typeof app>(host.deploymentUrl("club"), { transport: { fetch: counting } });
  try {
    await client.auth.ready();
    await client.auth.startEmailSignIn(APPROVED);
    const code = codes.filter((each) => each.email === APPROVED).at(-1)?.code as string;
    await client.auth.verifyEmailCode(APPROVED, code);
    // Signed out elsewhere (another device, with the same token).
    const signedOut = await post("/__platform/auth/sign-out", {}, (await client.auth.token()) as string);
    expect(signedOut.status).toBe(200);
    asked.length = 0;
    await expect(client.query("everything")).rejects.toBeDefined();
    expect(client.auth.getState()).toMatchObject({
      isSignedIn: false,
      identity: null,
      error: { code: "forbidden" },
    });
    expect(await client.auth.token()).toBeNull();
    expect(asked.filter((path) => path.startsWith("/__platform/auth/"))).toEqual([
      "/__platform/auth/renew",
      "/__platform/auth/guest",
    ]);
    asked.length = 0;
    await expect(client.query("everything")).rejects.toBeDefined();
    expect(asked.filter((path) => path.startsWith("/__platform/auth/"))).toEqual([]);
  } finally {
    client.close();
  }
});
