/** `host/auth`: tokens, sessions and identities of app users. */
export {
  AuthService,
  accountUserId,
  type IssuedToken,
  normaliseEmail,
  type SessionRecord,
} from "./auth-service.js";
export {
  type IdentityKind,
  RENEWAL_WINDOW_SECONDS,
  TOKEN_LIFETIME_SECONDS,
  type TokenClaims,
  TokenService,
} from "./tokens.js";
