/**
 * A token speaks for its session's record, never for what it claims of itself: one signed with the
 * host's key (a backup holds it) that points at a guest session its signer opened but names an
 * account, or lives longer than the host issues tokens for, is refused wherever it is used.
 */
import { type JWTPayload, SignJWT } from "jose";
import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { AuthService } from "./auth-service.js";
import { accountUserId } from "./sessions.js";
import { loadTokenSecret } from "./token-secret.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

const HOUR = 3600;
const CEO = "ceo@shop.example";

/** The claims of `token` a forger copies (as anyone can read them), less those {@link forge} sets. */
function claimsOf(token: string): Record<string, unknown> {
  const claims = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString());
  const { iat: _iat, exp: _exp, iss: _iss, aud: _aud, ...own } = claims as Record<string, unknown>;
  return own;
}

/** A token signed with the host's own key: `sub` and the other claims as given. */
async function forge(
  claims: Record<string, unknown>,
  times: { iat?: number; exp?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const { sub, ...rest } = claims;
  let jwt = new SignJWT(rest as JWTPayload)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer("platform")
    .setAudience("shop")
    .setSubject(sub as string);
  if (times.iat !== -1) jwt = jwt.setIssuedAt(times.iat ?? now);
  if (times.exp !== -1) jwt = jwt.setExpirationTime(times.exp ?? now + HOUR);
  return jwt.sign(await loadTokenSecret(env.db));
}

/** Every way a token is used: each must refuse it (401 unauthorized). */
async function expectRefusedEverywhere(auth: AuthService, token: string, message: RegExp): Promise<void> {
  const refused = { code: "unauthorized", message: expect.stringMatching(message) };
  await expect(auth.authenticate("shop", token)).rejects.toMatchObject(refused);
  await expect(auth.holdIdentity("shop", token, () => {})).rejects.toMatchObject(refused);
  await expect(auth.renew("shop", token)).rejects.toMatchObject(refused);
}

it("refuses a token whose claims differ from its session's record", async () => {
  const auth = await AuthService.open(env.db, async () => "inc-1");
  const guest = await auth.signInGuest("shop");
  const genuine = claimsOf(guest.token);
  const now = Math.floor(Date.now() / 1000);
  // The review's reproduction: the signer's own guest session, claiming the CEO's account.
  const asCeo = {
    kind: "account",
    sid: genuine.sid,
    ses: now,
    email: CEO,
    inc: "inc-1",
    sub: accountUserId("shop", CEO),
  };
  await expectRefusedEverywhere(auth, await forge(asCeo), /does not match its session/);
  // Each claim on its own: another guest's id, another kind, an email.
  const variants = [
    { ...genuine, sub: "guest:someone-else" },
    { ...genuine, kind: "account" },
    { ...genuine, email: CEO },
  ];
  for (const claims of variants)
    await expectRefusedEverywhere(auth, await forge(claims), /does not match its session/);
  // Presented with a sign-in, a guest token naming another guest upgrades nothing.
  const otherGuest = await forge({ ...genuine, sub: "guest:someone-else" });
  await expect(auth.guestToUpgrade("shop", otherGuest)).rejects.toMatchObject({ code: "unauthorized" });
  // An account's session: its token cannot be turned into another account's.
  const account = await auth.signInAccount("shop", "staff@shop.example");
  const staff = claimsOf(account.token);
  await expectRefusedEverywhere(
    auth,
    await forge({
      kind: "account",
      sid: staff.sid,
      ses: staff.ses,
      email: CEO,
      inc: "inc-1",
      sub: staff.sub,
    }),
    /does not match its session/,
  );
  // The genuine tokens still speak for their sessions.
  expect(await auth.authenticate("shop", guest.token)).toEqual({ userId: guest.userId, kind: "guest" });
  expect(await auth.authenticate("shop", account.token)).toEqual({
    userId: account.userId,
    kind: "account",
    email: "staff@shop.example",
  });
  expect((await auth.guestToUpgrade("shop", guest.token))?.userId).toBe(guest.userId);
});

it("refuses a token of the current incarnation pointing at a session of an earlier one", async () => {
  let incarnation = "inc-1";
  const auth = await AuthService.open(env.db, async () => incarnation);
  const guest = await auth.signInGuest("shop");
  const claims = claimsOf(guest.token);
  // The deployment was deleted and created again under its id: the session is of the earlier one.
  incarnation = "inc-2";
  await expectRefusedEverywhere(auth, guest.token, /deleted deployment/);
  await expectRefusedEverywhere(auth, await forge({ ...claims, inc: "inc-2" }), /does not match its session/);
});

it("refuses a token that claims a longer life than the host gives its tokens", async () => {
  const auth = await AuthService.open(env.db, async () => "inc-1");
  const guest = await auth.signInGuest("shop");
  const claims = claimsOf(guest.token);
  const now = Math.floor(Date.now() / 1000);
  const longLived = /longer life than this server gives/;
  // Matching its session, but valid for ten years.
  const tenYears = await forge(claims, { exp: now + 10 * 365 * 24 * HOUR });
  await expectRefusedEverywhere(auth, tenYears, longLived);
  await expect(auth.guestToUpgrade("shop", tenYears)).rejects.toMatchObject({ code: "unauthorized" });
  // An hour long, but dated a year ahead: good for a year.
  const ahead = now + 365 * 24 * HOUR;
  await expectRefusedEverywhere(
    auth,
    await forge(claims, { iat: ahead, exp: ahead + HOUR }),
    /more than a day ahead of this server's clock/,
  );
  // Issued by a host whose clock is 6 hours ahead (hosts of one database may disagree): accepted,
  // and renewed (with 5 minutes of margin a host behind refused every other host's tokens).
  const skewed = await forge(claims, { iat: now + 6 * HOUR, exp: now + 7 * HOUR });
  expect(await auth.authenticate("shop", skewed)).toEqual({ userId: guest.userId, kind: "guest" });
  expect((await auth.renew("shop", skewed)).token).toBeTruthy();
  // Without an expiry, or without an issue time.
  await expectRefusedEverywhere(auth, await forge(claims, { exp: -1 }), /not valid/);
  await expectRefusedEverywhere(auth, await forge(claims, { iat: -1 }), /not valid/);
  // The host's own lifetime is accepted.
  expect(await auth.authenticate("shop", await forge(claims))).toEqual({
    userId: guest.userId,
    kind: "guest",
  });
});
