/** `host/auth`: tokens, sessions and identities of app users; developers and claim tokens. */
export { AuthService, type RecordCommit } from "./auth-service.js";
export {
  CLAIM_TOKEN_PREFIX,
  DEVELOPER_TOKEN_PREFIX,
  type DeveloperRecord,
  Developers,
  hashSecret,
  matchesHash,
  newClaimToken,
  sameSecret,
} from "./developers.js";
export { type CodeRequest, EmailCodes, type EmailOptions, type UnsentCode } from "./email-codes.js";
export { checkOidcIssuers, type OidcIssuer, OidcVerifier } from "./oidc.js";
export {
  type EndHolder,
  type HeldIdentity,
  IDENTITY_ENDED,
  OpenSessions,
  SessionGate,
} from "./open-sessions.js";
export {
  accountUserId,
  type IssuedToken,
  namedGuestUserId,
  normaliseEmail,
  type SessionProof,
  type SessionRecord,
} from "./sessions.js";
export {
  type IdentityKind,
  RENEWAL_WINDOW_SECONDS,
  TOKEN_LIFETIME_SECONDS,
  type TokenClaims,
  TokenService,
} from "./tokens.js";
