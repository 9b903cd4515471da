import type { IssuedToken } from "./token-store.js";

/**
 * How long `token` is valid (ms), from its own claims (`exp - iat`, both in the host's clock), or
 * null when it carries no such claims (not a JWT, or a stand-in's token).
 */
export function lifetimeOf(token: unknown): number | null {
  if (typeof token !== "string") return null;
  const payload = token.split(".")[1];
  if (!payload) return null;
  let claims: { iat?: unknown; exp?: unknown };
  try {
    const base64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    claims = JSON.parse(atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "="))) as typeof claims;
  } catch {
    return null;
  }
  const { iat, exp } = claims ?? {};
  if (typeof iat !== "number" || typeof exp !== "number" || !(exp > iat)) return null;
  return (exp - iat) * 1000;
}

/**
 * `issued` with its `expiresAt` on this device's clock: the host's `expiresAt` is on the host's
 * clock, and a device whose clock runs an hour fast took every new token for one about to expire
 * and renewed it (reopening the socket) every second. The token's lifetime (its claims' `exp -
 * iat`, one clock) is counted from `sentAt`, when the request that got it left: the host issued it
 * after that, so the local expiry is never later than the real one. A token without those claims
 * keeps the host's `expiresAt`.
 */
export function onLocalClock(issued: IssuedToken, sentAt: number): IssuedToken {
  const lifetimeMs = lifetimeOf(issued?.token);
  return lifetimeMs === null ? issued : { ...issued, expiresAt: sentAt + lifetimeMs };
}

/** Renew this long before a token expires. */
export const RENEW_AHEAD_MS = 5 * 60 * 1000;

/**
 * A timer that runs `renew` {@link RENEW_AHEAD_MS} before `expiresAt` (this device's clock), at
 * least 1 s from now, without keeping a Node process alive for it.
 */
export function renewalTimer(expiresAt: number, renew: () => void): ReturnType<typeof setTimeout> {
  const delay = Math.max(1000, expiresAt - Date.now() - RENEW_AHEAD_MS);
  const timer = setTimeout(renew, Math.min(delay, 2 ** 31 - 1));
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
