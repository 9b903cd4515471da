import { createHash } from "node:crypto";
import { createRemoteJWKSet, customFetch, decodeJwt, jwtVerify } from "jose";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { boundedJwksFetch } from "./jwks-fetch.js";

/** An OpenID Connect client whose ID tokens sign accounts in to the deployments it names. */
export interface OidcIssuer {
  issuer: string;
  jwksUri: string;
  /** The client id the ID tokens must be issued for (`aud`). */
  audience: string;
  /**
   * The deployments that accept these tokens, or `"*"` for every deployment of the host. An ID
   * token carries no deployment: a client shared by several tenants lets any of them, which sees
   * its users' tokens, sign those users in to all the others. So each app gets a client id of its
   * own, and `"*"` is for a host whose deployments all belong to one party.
   */
  deployments: readonly string[] | "*";
}

/** How the shape of an issuer list is written, for error messages. */
const SHAPE = '[{"issuer": ..., "jwksUri": ..., "audience": ..., "deployments": ["<id>", ...] or "*"}]';

/** Hosts a JWKS may be fetched from over plain http: this machine's loopback only. */
const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Whether `url` is a JWKS URL the host fetches: https, or http to this machine. */
function fetchableJwks(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  return protocol === "https:" || (protocol === "http:" && LOOPBACK.has(hostname));
}

/**
 * `value` as a list of {@link OidcIssuer}s, or throws `bad_request` saying which entry is wrong and
 * how (`name` is what the operator set: an option or an environment variable).
 */
export function checkOidcIssuers(value: unknown, name: string): OidcIssuer[] {
  if (!Array.isArray(value)) throw new PlatformError("bad_request", `${name} must be a JSON list: ${SHAPE}.`);
  return value.map((entry: unknown, index) => {
    const where = `${name} entry ${index}`;
    if (typeof entry !== "object" || entry === null)
      throw new PlatformError("bad_request", `${where} must be an object: ${SHAPE}.`);
    const { issuer, jwksUri, audience, deployments } = entry as Record<string, unknown>;
    for (const [field, text] of [
      ["issuer", issuer],
      ["audience", audience],
    ] as const) {
      if (typeof text !== "string" || text === "")
        throw new PlatformError("bad_request", `${where} needs "${field}" (a non-empty string).`);
    }
    if (typeof jwksUri !== "string" || !fetchableJwks(jwksUri))
      throw new PlatformError(
        "bad_request",
        `${where} needs "jwksUri": the issuer's JWKS URL, over https (http only to this machine, for a local identity provider: whoever can change a JWKS on its way can sign in as anyone).`,
      );
    const listed =
      Array.isArray(deployments) &&
      deployments.length > 0 &&
      deployments.every((id) => typeof id === "string" && id !== "");
    if (deployments !== "*" && !listed)
      throw new PlatformError(
        "bad_request",
        `${where} needs "deployments": the ids of the deployments whose app uses client "${String(audience)}" (give each app a client id of its own), or "*" when every deployment on this host is yours.`,
      );
    return {
      issuer: issuer as string,
      jwksUri,
      audience: audience as string,
      deployments: deployments === "*" ? "*" : [...(deployments as string[])],
    };
  });
}

/**
 * Verifies OpenID Connect ID tokens for one deployment against the clients configured for it
 * (issuer, audience, each issuer's JWKS, fetched and cached by jose), requiring a verified email.
 */
export class OidcVerifier {
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  /**
   * The hashes of ID tokens that signed someone in, each until its expiry (ms since epoch), oldest
   * first: one token signs in once on this host (see {@link verifiedEmail}).
   */
  private readonly used = new Map<string, number>();
  private readonly issuers: OidcIssuer[];

  constructor(issuers: readonly OidcIssuer[]) {
    this.issuers = checkOidcIssuers(issuers, "oidcIssuers");
  }

  /** The verified email of `idToken` for deployment `deployment`, or throws `unauthorized`. */
  async verifiedEmail(deployment: string, idToken: unknown): Promise<string> {
    if (typeof idToken !== "string")
      throw new PlatformError("bad_request", "Send { idToken } from your identity provider.");
    let claims: { iss?: unknown; aud?: unknown };
    try {
      claims = decodeJwt(idToken);
    } catch {
      throw new PlatformError("unauthorized", "The ID token is not valid.");
    }
    const ofIssuer = this.issuers.filter((candidate) => candidate.issuer === claims.iss);
    if (ofIssuer.length === 0)
      throw new PlatformError("unauthorized", "ID tokens from that issuer are not accepted here.");
    const forDeployment = ofIssuer.filter(
      (candidate) => candidate.deployments === "*" || candidate.deployments.includes(deployment),
    );
    if (forDeployment.length === 0)
      throw new PlatformError(
        "unauthorized",
        `Deployment ${deployment} accepts no ID tokens from that issuer: its operator lists the identity provider's clients each deployment accepts.`,
      );
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    // A token for a client of another deployment matches none and fails verification below. A
    // token naming the client it was issued to (`azp`) is checked as that client's.
    const azp = (claims as { azp?: unknown }).azp;
    const client = (forDeployment.find((candidate) => candidate.audience === azp) ??
      forDeployment.find((candidate) => audiences.includes(candidate.audience)) ??
      forDeployment[0]) as OidcIssuer;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(idToken, this.keySet(client), {
        issuer: client.issuer,
        audience: client.audience,
        algorithms: ["RS256", "ES256", "EdDSA"],
        // OpenID Connect requires both in an ID token; without them jose takes one that never expires.
        requiredClaims: ["exp", "iat"],
      }));
    } catch {
      throw new PlatformError(
        "unauthorized",
        "The ID token is not valid (signature, issuer, audience or expiry).",
      );
    }
    // OpenID Connect: a token for several clients names the one it was issued to.
    if (audiences.length > 1 && payload.azp !== client.audience)
      throw new PlatformError("unauthorized", "The ID token was issued to another client (its azp).");
    if (payload.email_verified !== true || typeof payload.email !== "string") {
      throw new PlatformError("forbidden", "The identity provider has not verified this email address.");
    }
    this.spend(idToken, Number(payload.exp) * 1000);
    return payload.email;
  }

  /**
   * Marks `idToken` used until `expiresAt`, or refuses it when it was: one ID token could sign in
   * any number of times until it expired, a stored session each (1,186 in two seconds from one
   * token), and a leaked one signed in again after its user signed out. Kept in this host's memory,
   * at most {@link LIMITS.oidcTokensRemembered}, the oldest dropped first.
   */
  private spend(idToken: string, expiresAt: number): void {
    const hash = tokenHash(idToken);
    const now = Date.now();
    const until = this.used.get(hash);
    if (until !== undefined && until > now)
      throw new PlatformError(
        "unauthorized",
        "This ID token was already used to sign in: sign in with the identity provider again for a new one.",
      );
    this.used.delete(hash);
    this.used.set(hash, expiresAt);
    if (this.used.size <= LIMITS.oidcTokensRemembered) return;
    for (const [kept, keptUntil] of this.used) {
      if (keptUntil <= now || this.used.size > LIMITS.oidcTokensRemembered) this.used.delete(kept);
      else break;
    }
  }

  /**
   * Forgets that `idToken` was used: its sign-in failed after it was verified (the database
   * unavailable, a refused upgrade), and the app may try it again.
   */
  unspend(idToken: unknown): void {
    if (typeof idToken === "string") this.used.delete(tokenHash(idToken));
  }

  /** The key set of `client`'s JWKS, one per URL (an issuer may be listed once per client). */
  private keySet(client: OidcIssuer): ReturnType<typeof createRemoteJWKSet> {
    let keySet = this.keySets.get(client.jwksUri);
    if (!keySet) {
      keySet = createRemoteJWKSet(new URL(client.jwksUri), { [customFetch]: boundedJwksFetch() });
      this.keySets.set(client.jwksUri, keySet);
    }
    return keySet;
  }
}

/**
 * The key a used ID token is remembered by: the hash of what its signature signs (header and
 * claims), not of its text. Base64 decoding is lenient (padding, whitespace, a last character's
 * unused bits), so one token has many spellings that verify: hashed as text, each signed in again.
 */
function tokenHash(idToken: string): string {
  return createHash("sha256")
    .update(idToken.slice(0, Math.max(0, idToken.lastIndexOf("."))))
    .digest("base64url");
}
