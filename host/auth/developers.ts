import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, LockFence, RecordStore } from "../db/index.js";

/** A developer: owns deployments, uses the operator API with a bearer token. */
export interface DeveloperRecord {
  id: string;
  name?: string;
  email?: string;
  /** SHA-256 of the token; the token itself is shown once, at creation. */
  tokenHash: string;
  createdAt: number;
}

/** Prefix of developer tokens, so they are recognisable (and refused at app origins). */
export const DEVELOPER_TOKEN_PREFIX = "pdt_";

/** Refuses a developer token where an app user's token is expected (it proves no app identity). */
export function refuseDeveloperToken(token: string): void {
  if (token.startsWith(DEVELOPER_TOKEN_PREFIX))
    throw new PlatformError(
      "unauthorized",
      "Developer tokens are for the operator API; apps need an app user's token.",
    );
}

/** Prefix of claim tokens. */
export const CLAIM_TOKEN_PREFIX = "pct_";

/** SHA-256 (hex) of a secret, for storing tokens without storing them. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * Compares two secrets in constant time (for equal lengths; different lengths are simply unequal).
 * An empty secret matches nothing: a host run with no operator token must not take an empty one
 * as the operator's (found by review, with a token of only U+00A0 that trimmed to nothing).
 */
export function sameSecret(a: string, b: string): boolean {
  if (a.length === 0 || b.length === 0) return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Compares a secret with a stored hash in constant time. */
export function matchesHash(secret: string, hash: string): boolean {
  return sameSecret(hashSecret(secret), hash);
}

/** A new claim token and its hash. */
export function newClaimToken(): { token: string; hash: string } {
  const token = `${CLAIM_TOKEN_PREFIX}${randomBytes(24).toString("base64url")}`;
  return { token, hash: hashSecret(token) };
}

function newDeveloperToken(): string {
  return `${DEVELOPER_TOKEN_PREFIX}${randomBytes(24).toString("base64url")}`;
}

/** Developer accounts of a host. */
export class Developers {
  private readonly byId: RecordStore<DeveloperRecord>;
  private readonly byToken: RecordStore<{ id: string }>;

  constructor(private readonly db: HostDatabase) {
    this.byId = db.records<DeveloperRecord>("developers");
    this.byToken = db.records<{ id: string }>("developer-tokens");
  }

  /** Creates a developer; the token is returned once and only its hash is kept. */
  async create(input: {
    name?: unknown;
    email?: unknown;
  }): Promise<{ developer: DeveloperRecord; token: string }> {
    for (const key of ["name", "email"] as const) {
      const value = input[key];
      if (value !== undefined && (typeof value !== "string" || value.length === 0 || value.length > 200)) {
        throw new PlatformError(
          "bad_request",
          `${key} must be a non-empty string of at most 200 characters.`,
        );
      }
    }
    const token = newDeveloperToken();
    const developer: DeveloperRecord = {
      id: `dev_${randomBytes(9).toString("base64url")}`,
      tokenHash: hashSecret(token),
      createdAt: Date.now(),
      ...(input.name ? { name: input.name as string } : {}),
      ...(input.email ? { email: input.email as string } : {}),
    };
    await this.byId.put(developer.id, developer);
    await this.byToken.put(developer.tokenHash, { id: developer.id });
    return { developer, token };
  }

  /**
   * The developer a token belongs to, or undefined. The developer's record must name the token
   * too: a link a rotation left behind (two at once, or a crash between its writes) proves nothing.
   */
  async authenticate(token: string): Promise<DeveloperRecord | undefined> {
    if (!token.startsWith(DEVELOPER_TOKEN_PREFIX)) return undefined;
    const hash = hashSecret(token);
    const link = await this.byToken.get(hash);
    const developer = link ? await this.byId.get(link.id) : undefined;
    return developer && sameSecret(developer.tokenHash, hash) ? developer : undefined;
  }

  /**
   * Gives developer `id` a new token, returned once: the old one stops working at once, and so do
   * the dashboard sessions it signed in (see DashboardSessions). Undefined when there is no such
   * developer. `replacing`, the hash of the token the caller proved, must still be the developer's
   * when the new one is written: of two rotations with one token at once, the second is refused
   * instead of answering with a token the first made dead. Rotations of one developer take turns,
   * on every host of the database.
   */
  rotateToken(id: string, replacing?: string): Promise<string | undefined> {
    return this.db.exclusive(`developer-token:${id}`, (fence) => this.rotateNow(id, replacing, fence));
  }

  /** Under the developer's token lock, whose `fence` its writes pass: a rotation never lands over another's. */
  private async rotateNow(
    id: string,
    replacing: string | undefined,
    fence: LockFence | undefined,
  ): Promise<string | undefined> {
    const developer = await this.byId.get(id);
    if (!developer) return undefined;
    if (replacing !== undefined && !sameSecret(developer.tokenHash, replacing))
      throw new PlatformError(
        "forbidden",
        "That token was replaced by another request at the same moment; use the token that request answered, or ask the operator for a new one (POST /v1/developers/<id>/token).",
      );
    const token = newDeveloperToken();
    const tokenHash = hashSecret(token);
    // One batch: refused for a lost lock, none of it lands (the old token keeps working).
    await this.byId.batch(
      [{ id, value: Object.assign({}, developer, { tokenHash }) }],
      [
        { key: this.byToken.key(tokenHash), value: JSON.stringify({ id }) },
        { key: this.byToken.key(developer.tokenHash), value: null },
      ],
      fence,
    );
    return token;
  }

  /** The developer `id`, or undefined. */
  get(id: string): Promise<DeveloperRecord | undefined> {
    return this.byId.get(id);
  }
}
