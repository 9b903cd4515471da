/**
 * What a sign-in session is: its stored record, the token a client gets for it, and the names
 * that identify an account (a checked, lower-cased email and the opaque user id derived from it).
 */
import { createHash } from "node:crypto";
import { PlatformError } from "../../sdk/values/index.js";
import type { IdentityKind, TokenClaims } from "./tokens.js";

/** One sign-in session of a deployment. */
export interface SessionRecord {
  deployment: string;
  session: string;
  userId: string;
  kind: IdentityKind;
  email?: string;
  /** The deployment's incarnation when the session started. */
  incarnation?: string;
  createdAt: number;
  /** Set when a guest session was upgraded: its tokens are refused from then on. */
  retiredAt?: number;
  upgradedTo?: string;
  /** Set when the session signed out: its tokens are refused from then on (the account stays). */
  signedOutAt?: number;
}

/** `record` if it is a live session; else `unauthorized`, saying why. */
export function requireLiveSession(record: SessionRecord | undefined): SessionRecord {
  if (!record) throw new PlatformError("unauthorized", "This session no longer exists; sign in again.");
  if (record.signedOutAt !== undefined)
    throw new PlatformError("unauthorized", "This session was signed out; sign in again.");
  if (record.retiredAt !== undefined) {
    throw new PlatformError(
      "unauthorized",
      "This guest session was upgraded to an account; use the account's token.",
    );
  }
  return record;
}

/**
 * `record` if `claims` are what its tokens were issued with: the same deployment, user, kind,
 * email and incarnation; else `unauthorized`. The identity a token proves is its session's, and
 * only a holder of the signing key can make a token that says otherwise: one pointed at a guest
 * session it opened, claiming an account, spoke for that account. Records have stored all of
 * these since the first version (the incarnation since incarnations exist, as tokens carry it).
 */
export function requireIssuedFor(record: SessionRecord, claims: TokenClaims): SessionRecord {
  if (
    record.deployment !== claims.deployment ||
    record.userId !== claims.userId ||
    record.kind !== claims.kind ||
    (record.email ?? null) !== (claims.email ?? null) ||
    (record.incarnation ?? null) !== (claims.incarnation ?? null)
  )
    throw new PlatformError(
      "unauthorized",
      "The token does not match its session (this server did not issue it so); sign in again.",
    );
  return record;
}

/**
 * The caller's sign-in session, checked again inside a mutation's transaction. Mutations of a
 * deployment run one after another, and a guest upgrade retires the guest's session in its own
 * transaction, so a mutation that was authenticated an instant before an upgrade committed sees
 * the retirement here and is refused: nothing is ever written as a retired identity.
 */
export interface SessionProof {
  /** The session record's key in the host's store. */
  key: Buffer;
  /** Throws `unauthorized` unless `stored` (the record's JSON, or null when gone) is a live session. */
  check(stored: string | null): void;
}

/** A token handed to a client. */
export interface IssuedToken {
  token: string;
  userId: string;
  kind: IdentityKind;
  email?: string;
  expiresAt: number;
}

/**
 * A plain mailbox: a local part of letters, digits and `.!#$%&'*+/=?^_\`{|}~-`, and a domain of
 * dot-separated labels of letters, digits and `-`. No display names, comments, quoting, brackets,
 * or lists: the address a limit counts must be the one mail goes to, and text such as
 * `"Your account is suspended" <a@b.c>` or `x,a@b.c` sent codes to `a@b.c` past its limit under
 * other keys, with words of the sender's choosing in the `To:` header.
 */
const PLAIN_EMAIL =
  /^[\p{L}\p{N}.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,255}$)(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?$/u;
/** {@link PLAIN_EMAIL} with combining marks (scripts written with them, and decomposed letters). */
const EMAIL =
  /^[\p{L}\p{M}\p{N}.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,255}$)(?:[\p{L}\p{N}](?:[\p{L}\p{M}\p{N}-]{0,61}[\p{L}\p{M}\p{N}])?\.)+[\p{L}\p{N}](?:[\p{L}\p{M}\p{N}-]{0,61}[\p{L}\p{M}\p{N}])?$/u;

/**
 * A character that is not ASCII but stands for ASCII once normalised or lower-cased (the Kelvin
 * sign for `k`): an address spelt with it would be another mailbox for its mail server, yet the
 * same account here.
 */
function asciiInDisguise(character: string): boolean {
  if (character.charCodeAt(0) <= 0x7f) return false;
  return [...character.normalize("NFC").toLowerCase()].every((plain) => plain.charCodeAt(0) <= 0x7f);
}

/** Names a guest may be given where naming is allowed (`platform dev`, the dashboard's runner). */
const GUEST_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The user id of the guest named `name` (checked: `bad_request` when it is not a guest name). */
export function namedGuestUserId(name: unknown): string {
  if (typeof name !== "string" || !GUEST_NAME.test(name))
    throw new PlatformError("bad_request", "A guest name is 1-63 lowercase letters, digits, '_' or '-'.");
  return `guest:${name}`;
}

/**
 * Checks and normalises an email address (lower-cased). One without combining marks is kept as
 * it is spelt, as every version before did: an account's user id is derived from this form, and
 * composing some letters (Greek with oxia, Devanagari nukta letters, compatibility ideographs)
 * would make their owners new accounts. One with combining marks, refused before, is composed
 * first (NFC), so a decomposed address is the composed one. Refuses a character standing for a
 * plain letter.
 */
export function normaliseEmail(email: unknown): string {
  // Lower-casing a composed letter can leave it decomposed again (Greek with a mark and an iota
  // below), so one pass was not its own fixed point: a code mailed to one spelling signed in the
  // account of another. Passes repeat until the form holds (two always did, over every letter).
  let normalised = normaliseOnce(email);
  for (let pass = 0; pass < 3; pass++) {
    const again = normaliseOnce(normalised);
    if (again === normalised) return normalised;
    normalised = again;
  }
  return normalised;
}

function normaliseOnce(email: unknown): string {
  if (typeof email !== "string") throw new PlatformError("bad_request", "A valid email address is required.");
  const trimmed = email.trim();
  if ([...trimmed].some(asciiInDisguise))
    throw new PlatformError(
      "bad_request",
      "The email address has a character that stands for a plain letter (such as the Kelvin sign for K); write it with plain letters.",
    );
  if (PLAIN_EMAIL.test(trimmed)) return trimmed.toLowerCase();
  const composed = trimmed.normalize("NFC");
  if (!EMAIL.test(composed)) throw new PlatformError("bad_request", "A valid email address is required.");
  return composed.toLowerCase();
}

/** The stable, opaque user id of `email` in `deployment`. */
export function accountUserId(deployment: string, email: string): string {
  return `user:${createHash("sha256").update(`${deployment}\u0000${email}`).digest("base64url").slice(0, 22)}`;
}
