import { randomBytes } from "node:crypto";
import { PlatformError } from "../../sdk/values/index.js";
import type { SessionStore } from "./session-store.js";
import type { IssuedToken, SessionRecord } from "./sessions.js";
import { type IdentityKind, type TokenClaims, type TokenService, tokenMatchesIncarnation } from "./tokens.js";

/**
 * The incarnation of deployment `id` its tokens must carry: a string, null for a deployment
 * created before incarnations existed, undefined when there is no such deployment.
 */
export type IncarnationLookup = (id: string) => Promise<string | null | undefined>;

/**
 * Sessions and the tokens that prove them, tied to their deployment's incarnation: a session
 * started (its record stored) with its first token, a fresh token for a stored session, and the
 * check that a token is of the deployment as it is now, not of a deleted one that had its id.
 * AuthService decides when; this says how.
 */
export class SessionTokens {
  constructor(
    private readonly sessions: SessionStore,
    private readonly tokens: TokenService,
    private readonly incarnationOf: IncarnationLookup,
  ) {}

  /** Stores a new session of `userId` in `deployment` and issues its first token. */
  async start(
    deployment: string,
    kind: IdentityKind,
    userId: string,
    email?: string,
    /** The incarnation the caller was allowed for (null: none); another one is refused. */
    expected?: string | null,
  ): Promise<IssuedToken> {
    const now = Date.now();
    const incarnation = await this.incarnationOf(deployment);
    if (incarnation === undefined || (expected !== undefined && incarnation !== expected))
      throw new PlatformError("not_found", `No deployment named ${deployment}.`);
    const record: SessionRecord = {
      deployment,
      ...(incarnation === null ? {} : { incarnation }),
      session: randomBytes(16).toString("base64url"),
      userId,
      kind,
      createdAt: now,
      ...(email ? { email } : {}),
    };
    await this.sessions.add(record);
    return this.issue(record, Math.floor(now / 1000));
  }

  /** A token for session `record`, whose first token was issued at `issuedAt` (seconds). */
  async issue(record: SessionRecord, issuedAt: number): Promise<IssuedToken> {
    const claims: TokenClaims = {
      deployment: record.deployment,
      userId: record.userId,
      kind: record.kind,
      session: record.session,
      issuedAt,
      ...(record.email ? { email: record.email } : {}),
      ...(record.incarnation ? { incarnation: record.incarnation } : {}),
    };
    const { token, expiresAt } = await this.tokens.issue(claims);
    return {
      token,
      userId: record.userId,
      kind: record.kind,
      expiresAt,
      ...(record.email ? { email: record.email } : {}),
    };
  }

  /**
   * Verifies `token` for `deployment` (see {@link TokenService.verify}) and that it belongs to the
   * deployment's current incarnation, not to a deleted deployment that had the same id.
   */
  async verify(token: string, deployment: string, allowExpired: boolean): Promise<TokenClaims> {
    const claims = await this.tokens.verify(token, deployment, { allowExpired });
    const current = await this.incarnationOf(deployment);
    if (current === undefined || !tokenMatchesIncarnation(claims.incarnation, current)) {
      throw new PlatformError(
        "unauthorized",
        "This token belongs to a deleted deployment that had the same id; sign in again.",
      );
    }
    return claims;
  }
}
