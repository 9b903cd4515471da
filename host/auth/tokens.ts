import { errors, jwtVerify, SignJWT } from "jose";
import { PlatformError } from "../../sdk/values/index.js";

/** Who a token speaks for. Developer tokens belong to the control plane, not to app origins. */
export type IdentityKind = "guest" | "account";

/** What a token carries. */
export interface TokenClaims {
  deployment: string;
  userId: string;
  kind: IdentityKind;
  email?: string;
  /** The session the token belongs to; sessions can be retired (a guest after its upgrade). */
  session: string;
  /** When the session's first token was issued (seconds since epoch); bounds renewal. */
  issuedAt: number;
  /** The incarnation of the deployment the token was issued by (absent for one created before incarnations). */
  incarnation?: string;
}

/**
 * Whether a token's incarnation fits the deployment's current one (`null`: a deployment created
 * before incarnations existed, whose tokens carry none). A token of a deleted deployment never fits
 * a new one with the same id: the new one has a fresh incarnation.
 */
export function tokenMatchesIncarnation(token: string | undefined, current: string | null): boolean {
  return current === null ? token === undefined : token === current;
}

/**
 * Token format and lifetime (documented in the README):
 * - a JWT signed with HS256 by the host's secret; `alg` is pinned, so `none` or any other algorithm
 *   is refused;
 * - `aud` is the deployment id: a token of deployment A is refused by B;
 * - `sub` is the user id, `kind` guest or account, `email` for accounts, `sid` the session, `ses`
 *   the session start, `inc` the deployment's incarnation (see {@link tokenMatchesIncarnation});
 * - it expires after {@link TOKEN_LIFETIME_SECONDS} (one without `exp` and `iat`, or claiming a
 *   longer life, is refused); the client renews it at
 *   `POST /__platform/auth/renew` until {@link RENEWAL_WINDOW_SECONDS} after the session started.
 */
export const TOKEN_LIFETIME_SECONDS = 60 * 60;
export const RENEWAL_WINDOW_SECONDS = 30 * 24 * 60 * 60;
/**
 * How far hosts sharing a database may disagree about the time: a token's `iat` may be this far
 * ahead of this host's clock (each host verifies and renews the others' tokens; with 5 minutes,
 * a host 6 minutes behind refused them all, renewals included, and signed their users out), and
 * a session is swept this long after it ended (session-sweep.ts). A token dated further ahead is
 * refused: it would outlive {@link TOKEN_LIFETIME_SECONDS} by as much.
 */
export const HOSTS_CLOCK_MARGIN_SECONDS = 24 * 60 * 60;
const ISSUER = "platform";

function unauthorized(message: string): PlatformError {
  return new PlatformError("unauthorized", message);
}

/**
 * Refuses a token that lives longer than this host issues them for: `exp` more than
 * {@link TOKEN_LIFETIME_SECONDS} after `iat`, or `iat` ahead of now (beyond the hosts' clock
 * margin). Only a holder of the signing key can make one, and without this bound a token it signed
 * for ten years was good for ten years.
 */
function refuseLongLived(payload: Record<string, unknown>, now: number): void {
  const { iat, exp } = payload as { iat: number; exp: number };
  if (exp - iat > TOKEN_LIFETIME_SECONDS)
    throw unauthorized("The token claims a longer life than this server gives its tokens; sign in again.");
  if (iat > Math.floor(now / 1000) + HOSTS_CLOCK_MARGIN_SECONDS)
    throw unauthorized(
      "The token was issued more than a day ahead of this server's clock; check the servers' clocks, then sign in again.",
    );
}

/** Signs and verifies identity tokens with the host's secret. */
export class TokenService {
  private readonly key: Uint8Array;

  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new Error("The token secret must be at least 32 bytes.");
    this.key = secret;
  }

  /** Issues a token for `claims`, valid for {@link TOKEN_LIFETIME_SECONDS}. */
  async issue(claims: TokenClaims, now = Date.now()): Promise<{ token: string; expiresAt: number }> {
    const iat = Math.floor(now / 1000);
    const exp = iat + TOKEN_LIFETIME_SECONDS;
    const token = await new SignJWT({
      kind: claims.kind,
      sid: claims.session,
      ses: claims.issuedAt,
      ...(claims.email ? { email: claims.email } : {}),
      ...(claims.incarnation ? { inc: claims.incarnation } : {}),
    })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer(ISSUER)
      .setAudience(claims.deployment)
      .setSubject(claims.userId)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: exp * 1000 };
  }

  /**
   * Verifies `token` for `deployment`. With `allowExpired`, an expired token still verifies while
   * its session is inside the renewal window (renewal and finishing a pending guest upgrade).
   */
  async verify(
    token: string,
    deployment: string,
    options: { allowExpired?: boolean; now?: number } = {},
  ): Promise<TokenClaims> {
    const now = options.now ?? Date.now();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: ["HS256"],
        issuer: ISSUER,
        currentDate: new Date(now),
        requiredClaims: ["exp", "iat"],
        ...(options.allowExpired ? { clockTolerance: RENEWAL_WINDOW_SECONDS } : {}),
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired)
        throw unauthorized(
          "The token has expired; renew it at POST /__platform/auth/renew or sign in again.",
        );
      if (error instanceof errors.JWSSignatureVerificationFailed)
        throw unauthorized(
          "The token was not signed by this server: it comes from another server, or this one started without its data (platform dev keeps none unless given --data). Sign in again, or get a guest token at POST /__platform/auth/guest.",
        );
      throw unauthorized("The token is not valid (bad signature, algorithm or format).");
    }
    const audience = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!audience.includes(deployment)) throw unauthorized("The token belongs to another deployment.");
    const kind = payload.kind;
    if (
      (kind !== "guest" && kind !== "account") ||
      typeof payload.sub !== "string" ||
      typeof payload.sid !== "string" ||
      typeof payload.ses !== "number"
    ) {
      throw unauthorized("The token is not valid (bad signature, algorithm or format).");
    }
    refuseLongLived(payload, now);
    if (options.allowExpired && Math.floor(now / 1000) - payload.ses > RENEWAL_WINDOW_SECONDS) {
      throw unauthorized("The session is too old to renew; sign in again.");
    }
    return {
      deployment,
      userId: payload.sub,
      kind,
      session: payload.sid,
      issuedAt: payload.ses,
      ...(typeof payload.email === "string" ? { email: payload.email } : {}),
      ...(typeof payload.inc === "string" ? { incarnation: payload.inc } : {}),
    };
  }
}
