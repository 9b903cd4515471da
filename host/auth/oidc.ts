import { createRemoteJWKSet, decodeJwt, jwtVerify } from "jose";
import { PlatformError } from "../../sdk/values/index.js";

/** An OpenID Connect issuer whose ID tokens the host accepts. */
export interface OidcIssuer {
  issuer: string;
  jwksUri: string;
  /** The client id the ID tokens must be issued for (`aud`). */
  audience: string;
}

/**
 * Verifies OpenID Connect ID tokens from configured issuers against each issuer's JWKS (fetched
 * and cached by jose), requiring a verified email.
 */
export class OidcVerifier {
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  constructor(private readonly issuers: OidcIssuer[]) {}

  /** The verified email of `idToken`, or throws `unauthorized`. */
  async verifiedEmail(idToken: unknown): Promise<string> {
    if (typeof idToken !== "string")
      throw new PlatformError("bad_request", "Send { idToken } from your identity provider.");
    let claimedIssuer: unknown;
    try {
      claimedIssuer = decodeJwt(idToken).iss;
    } catch {
      throw new PlatformError("unauthorized", "The ID token is not valid.");
    }
    const issuer = this.issuers.find((candidate) => candidate.issuer === claimedIssuer);
    if (!issuer) throw new PlatformError("unauthorized", "ID tokens from that issuer are not accepted here.");
    let keySet = this.keySets.get(issuer.issuer);
    if (!keySet) {
      keySet = createRemoteJWKSet(new URL(issuer.jwksUri));
      this.keySets.set(issuer.issuer, keySet);
    }
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(idToken, keySet, {
        issuer: issuer.issuer,
        audience: issuer.audience,
        algorithms: ["RS256", "ES256", "EdDSA"],
      }));
    } catch {
      throw new PlatformError(
        "unauthorized",
        "The ID token is not valid (signature, issuer, audience or expiry).",
      );
    }
    if (payload.email_verified !== true || typeof payload.email !== "string") {
      throw new PlatformError("forbidden", "The identity provider has not verified this email address.");
    }
    return payload.email;
  }
}
