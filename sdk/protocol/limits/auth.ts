/**
 * Apps' users' identities: OpenID Connect issuers' key sets, emailed sign-in codes, guests, and the
 * account sessions developers mint.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const AUTH_LIMITS = {
  /**
   * An OpenID Connect issuer's JWKS: bytes read of it, keys taken from it, and how long after a
   * failed fetch the next one waits (ms; the last good JWKS serves meanwhile, see below). Ours.
   */
  jwksBytes: 1024 * 1024,
  jwksKeys: 100,
  jwksRetryMs: 30_000,
  /** How long after its fetch the last good JWKS still serves while fetches fail (ms). Ours. */
  jwksStaleMs: 60 * 60 * 1000,
  /**
   * Digits of an emailed sign-in code. Ours: with 5 guesses a code and 5 codes an address a
   * quarter of an hour, six digits gave a patient attacker about one chance in 400 a day of taking
   * a known user's account (and 58% in a year); eight give one in 40,000.
   */
  emailCodeDigits: 8,
  /** How long an emailed sign-in code is valid, in ms. */
  emailCodeLifetimeMs: 10 * 60_000,
  /** Wrong guesses that kill a sign-in code (counted atomically, concurrent guesses included). */
  emailCodeAttempts: 5,
  /**
   * Codes one exact address may be sent per {@link LIMITS.emailCodeWindowSeconds} by one
   * deployment, whoever asks (beyond, a request gets the newest live code's handle). Ours. Per
   * spelling: counted per mailbox, another spelling's requests left the address none to hand out.
   */
  emailCodeRequestsPerAddress: 5,
  /**
   * Sign-in mails one mailbox may be sent per {@link LIMITS.emailCodeWindowSeconds} at the asking
   * of one client network, every spelling and every deployment of the installation together (a
   * mailbox: the address less its `+tag`, and for Gmail its dots; beyond, a request gets the
   * newest live code's handle, as past the per-deployment limit). Ours: else one client could have
   * each deployment, or each `victim+<i>@`, mail a victim. Per network, so that someone else's
   * flood leaves the owner codes; shared by a user of several apps on one host.
   */
  emailCodeMailsPerAddress: 10,
  /** Codes one client address (IP) may request per {@link LIMITS.emailCodeWindowSeconds} from one deployment, all emails together. Ours. */
  emailCodeRequestsPerClient: 30,
  /** Codes one client address (IP) may request per {@link LIMITS.emailCodeWindowSeconds} from every deployment of a host together. Ours. */
  emailCodeRequestsPerClientHostWide: 100,
  /** The window of the two code request limits above, in seconds. */
  emailCodeWindowSeconds: 15 * 60,
  /**
   * Guests one client address may create per deployment per {@link LIMITS.guestSignInWindowSeconds}
   * (not in `platform dev`). Ours: each guest has a request quota of its own, so unbounded guests
   * would multiply a client's quota (Firebase allows 100 anonymous sign-ins an hour per address).
   */
  guestSignInsPerClient: 100,
  guestSignInWindowSeconds: 60 * 60,
  /**
   * OpenID Connect sign-ins one client address may make per deployment per
   * {@link LIMITS.guestSignInWindowSeconds} (not in `platform dev`). Ours: each stores a session,
   * so with no bound one caller's fresh tokens filled the disk; room for an office behind one address.
   */
  oidcSignInsPerClient: 300,
  /**
   * ID tokens a host remembers as used, until each expires (one signs in once); past it the oldest
   * are forgotten. Ours: about 100 bytes each.
   */
  oidcTokensRemembered: 200_000,
  /**
   * Account sessions one developer may mint per minute for their deployments' users
   * (`POST /v1/deploys/<id>/sessions`; the operator's are not limited). Ours: each is a stored
   * record, kept until no token of it can be used.
   */
  sessionsMintedPerMinute: 60,
} as const;
