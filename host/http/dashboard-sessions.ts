import { randomBytes } from "node:crypto";
import type { Context } from "koa";
import { PLATFORM_SESSION_COOKIE } from "../../sdk/protocol/index.js";
import { type DeveloperRecord, type Developers, hashSecret, sameSecret } from "../auth/index.js";
import type { HostDatabase, RecordStore } from "../db/index.js";
import { reachedOverTls } from "./client-address.js";
import { OperatorMarks } from "./operator-mark.js";
import type { Principal, SessionLookup } from "./principal.js";

/**
 * A dashboard session as stored: a developer's id, or, for the operator, a salted scrypt of the
 * operator token it signed in with (never the token; see {@link OperatorMarks}), so changing
 * `PLATFORM_ADMIN_TOKEN` ends every operator session at once.
 */
interface DashboardSession {
  developer?: string;
  /** The developer's token hash at sign-in: a rotated token ends the sessions it opened. */
  developerToken?: string;
  operator?: string;
  csrf: string;
  expiresAt: number;
}

/** Who a valid session cookie signs in, with its CSRF token and a name to show. */
export interface SignedIn {
  who: Principal;
  name: string;
  csrf: string;
}

/** The dashboard's session cookie: no capsule endpoint may set a cookie of this name. */
export const SESSION_COOKIE = PLATFORM_SESSION_COOKIE;
/**
 * Its name over HTTPS. A browser takes a `__Host-` cookie only from the very host it is for,
 * never with a `Domain`: a tenant's page at `<id>.<domain>` cannot plant one on the control plane.
 */
const HOST_ONLY_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;
const SESSION_MS = 12 * 60 * 60 * 1000;

/** Every value of cookie `name` in a `Cookie` header, in order (a parser keeping one would hide a second). */
function cookieValues(header: string, name: string): string[] {
  const values: string[] = [];
  for (const pair of header.split(";")) {
    const equals = pair.indexOf("=");
    if (equals >= 0 && pair.slice(0, equals).trim() === name) values.push(pair.slice(equals + 1).trim());
  }
  return values;
}

/**
 * The dashboard's sessions, kept in the database (so every host on it knows them) under the
 * SHA-256 of their id (a copy of the data folder or a backup holds no usable session): a random
 * 256-bit id in an HttpOnly, SameSite=Strict cookie for 12 hours, `__Host-` over HTTPS; a request
 * carrying the cookie twice is signed in as no one. The operator token and developer
 * tokens both sign in; a session speaks for the operator only while the host's token is the one
 * it was made with, and for a developer only while the developer exists with the same token.
 */
export class DashboardSessions implements SessionLookup {
  private readonly sessions: RecordStore<DashboardSession>;
  private readonly operatorMarks: OperatorMarks;

  constructor(
    db: HostDatabase,
    private readonly developers: Developers,
    private readonly adminToken: string,
    /** The host is reachable only through one reverse proxy, whose `X-Forwarded-Proto` says HTTPS. */
    private readonly trustProxy = false,
  ) {
    this.sessions = db.records<DashboardSession>("dashboard-sessions");
    this.operatorMarks = new OperatorMarks(adminToken);
  }

  /** Starts a session for `token` and sets its cookie; false (nothing set) when the token is not accepted. */
  async signIn(ctx: Context, token: string): Promise<boolean> {
    const operator = token.length > 0 && sameSecret(token, this.adminToken);
    const developer = operator ? undefined : await this.developers.authenticate(token);
    if (!operator && !developer) return false;
    await this.start(ctx, developer);
    return true;
  }

  /**
   * Starts an operator session without a token (`platform dev` on loopback only, see
   * `mayAutoSignIn`) and sets its cookie; returns it as {@link current} would.
   */
  async signInOperator(ctx: Context): Promise<SignedIn> {
    const csrf = await this.start(ctx, undefined);
    return { who: { kind: "admin" }, name: "the operator", csrf };
  }

  /** The session cookie's name for this request: host-only (`__Host-`) when it came over HTTPS. */
  private cookieName(ctx: Context): string {
    return reachedOverTls(ctx.req, this.trustProxy) ? HOST_ONLY_SESSION_COOKIE : SESSION_COOKIE;
  }

  /** The values the request carries of the session cookie (one, normally). */
  private sessionCookies(ctx: Context): string[] {
    return cookieValues(ctx.get("cookie"), this.cookieName(ctx));
  }

  /** The session id of the request's one session cookie when it has the shape of one, else undefined. */
  private sessionIdOf(ctx: Context): string | undefined {
    const [id, ...more] = this.sessionCookies(ctx);
    return id && more.length === 0 && /^[A-Za-z0-9_-]{43}$/.test(id) ? id : undefined;
  }

  /**
   * Whether the request carries the session cookie more than once: one was planted by a page of
   * another host under the domain, so neither speaks for anyone (see `TWO_SESSION_COOKIES`).
   */
  twoCookies(ctx: Context): boolean {
    return this.sessionCookies(ctx).length > 1;
  }

  /** Stores a new session (a developer's, else the operator's), sets its cookie, returns its CSRF token. */
  private async start(ctx: Context, developer: DeveloperRecord | undefined): Promise<string> {
    const id = randomBytes(32).toString("base64url");
    const session: DashboardSession = {
      csrf: randomBytes(24).toString("base64url"),
      expiresAt: Date.now() + SESSION_MS,
    };
    if (developer) {
      session.developer = developer.id;
      session.developerToken = developer.tokenHash;
    } else session.operator = this.operatorMarks.mark();
    await this.sessions.put(hashSecret(id), session);
    ctx.cookies.set(this.cookieName(ctx), id, this.cookieAttributes(ctx, SESSION_MS));
    return session.csrf;
  }

  /**
   * The session cookie's attributes for `maxAge` ms (0 clears it): HttpOnly, SameSite=Strict, and
   * Secure when the client reached the host over HTTPS through its proxy, so that the browser never
   * sends the session over plain HTTP.
   */
  private cookieAttributes(ctx: Context, maxAge: number) {
    const secure = reachedOverTls(ctx.req, this.trustProxy);
    // `cookies` refuses a Secure cookie on a connection it believes is plain; the proxy said it is not.
    if (secure) ctx.cookies.secure = true;
    return { httpOnly: true, sameSite: "strict" as const, secure, maxAge, overwrite: true };
  }

  /** Whether the request carries a session cookie at all, valid or not. */
  presented(ctx: Context): boolean {
    return this.sessionCookies(ctx).length > 0;
  }

  /** Ends the request's session (its record is deleted, so a copied cookie is dead too) and clears the cookie. */
  async signOut(ctx: Context): Promise<void> {
    const id = this.sessionIdOf(ctx);
    if (id) await this.sessions.delete(hashSecret(id));
    ctx.cookies.set(this.cookieName(ctx), "", this.cookieAttributes(ctx, 0));
  }

  /** Who the request's session cookie signs in, or undefined. */
  async current(ctx: Context): Promise<SignedIn | undefined> {
    const id = this.sessionIdOf(ctx);
    if (!id) return undefined;
    const found = await this.sessions.get(hashSecret(id));
    if (!found) return undefined;
    if (found.expiresAt < Date.now()) {
      await this.sessions.delete(hashSecret(id));
      return undefined;
    }
    if (found.operator !== undefined)
      return this.operatorMarks.matches(found.operator)
        ? { who: { kind: "admin" }, name: "the operator", csrf: found.csrf }
        : undefined;
    const developer = found.developer ? await this.developers.get(found.developer) : undefined;
    return developer && found.developerToken === developer.tokenHash
      ? { who: { kind: "developer", developer }, name: developer.name ?? developer.id, csrf: found.csrf }
      : undefined;
  }
}

/**
 * Deletes the dashboard sessions that expired: without it every sign-in (a script may sign in as
 * often as its limit allows) is kept for good. Reads a page at a time; returns how many it deleted.
 */
export async function sweepExpiredDashboardSessions(db: HostDatabase, now = Date.now()): Promise<number> {
  const sessions = db.records<DashboardSession>("dashboard-sessions");
  let deleted = 0;
  for await (const page of sessions.entryPages()) {
    const expired = page.filter(([, session]) => session.expiresAt < now);
    if (expired.length === 0) continue;
    await sessions.batch(expired.map(([id]) => ({ id, value: null })));
    deleted += expired.length;
  }
  return deleted;
}
