import { isPlatformError, PlatformError } from "../values/index.js";
import { AuthRoutes } from "./auth-routes.js";
import { AuthSteps, identityOf } from "./auth-steps.js";
import type { AuthState, ClientIdentity } from "./auth-types.js";
import { GuestRetries } from "./guest-retries.js";
import { RENEW_AHEAD_MS, renewalTimer } from "./token-expiry.js";
import { type IssuedToken, type StoredAuth, TokenStore } from "./token-store.js";
import type { FetchFunction, KeyValueStore } from "./transport.js";

/**
 * The client's identity for one deployment: the stored token, renewed before it expires; a
 * protected guest created on first use (when enabled); account sign-in by email code, OpenID
 * Connect ID token or (in `platform dev`) at once, each presenting the guest's token so the host
 * moves the guest's data to the account. Tokens are kept per deployment origin.
 */
export class AuthSession {
  private stored: StoredAuth;
  private readonly tokenListeners = new Set<() => void>();
  private loading: Promise<void> | null = null;
  private renewing: Promise<void> | null = null;
  /** A guest start that {@link validToken} tries again after the first failed (see GuestRetries). */
  private guestStarting: Promise<void> | null = null;
  private readonly guestRetries = new GuestRetries();
  /** An account sign-in whose answer has not arrived yet. */
  private signingIn: Promise<unknown> | null = null;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  /** The attempt handle of each email's pending code (lower-cased email -> handle). */
  private readonly emailAttempts = new Map<string, string>();
  private closed = false;
  private readonly tokens: TokenStore;
  private readonly routes: AuthRoutes;
  private readonly steps: AuthSteps;
  /** The token the store held when this client last read or wrote it (see {@link adoptStored}). */
  private inStore: string | null;

  constructor(
    baseUrl: string,
    fetch: FetchFunction,
    store: KeyValueStore,
    private readonly options: { guest: boolean },
  ) {
    this.tokens = new TokenStore(store, baseUrl);
    this.routes = new AuthRoutes(baseUrl, fetch);
    this.stored = this.tokens.read();
    this.inStore = this.current();
    this.steps = new AuthSteps(() => this.stored.current);
  }

  private save(next: StoredAuth): void {
    const tokenChanged = next.current?.token !== this.stored.current?.token;
    this.stored = next;
    if (this.tokens.write(next)) this.inStore = this.current();
    this.scheduleRenewal();
    if (tokenChanged) for (const listener of [...this.tokenListeners]) listener();
  }

  /** The current state; the same object until something changes (for `useSyncExternalStore`). */
  getState(): AuthState {
    return this.steps.getState();
  }

  /** Calls `listener` whenever the state changes; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    return this.steps.subscribe(listener);
  }

  /** Calls `listener` whenever the identity's token is replaced (sign-in, sign-out, new guest). */
  onTokenChange(listener: () => void): () => void {
    this.tokenListeners.add(listener);
    return () => this.tokenListeners.delete(listener);
  }

  private current(): string | null {
    return this.stored.current?.token ?? null;
  }

  /** The user the current token belongs to (null: none), read with it. */
  user(): string | null {
    return this.stored.current?.userId ?? null;
  }

  /**
   * Takes the store's token when another client of the same store (another tab) wrote it since
   * this one last read or wrote the store, as this client is about to renew or replace its own
   * (`replacing`): a sign-in there retires this tab's guest, and a new guest made here must not
   * overwrite that account in the store. True when it took one.
   */
  private adoptStored(replacing: string): boolean {
    const stored = this.tokens.read();
    const token = stored.current?.token;
    // Unchanged since this client last saw it (a store refusing writes still holds an old token).
    if (!token || token === this.inStore || token === replacing || token === this.current()) return false;
    this.inStore = token;
    this.stored = stored;
    this.scheduleRenewal();
    this.steps.publish();
    for (const listener of [...this.tokenListeners]) listener();
    return true;
  }

  /** Loads the session once: renews a stored token that is about to expire, or starts a guest. */
  ready(): Promise<void> {
    this.loading ??= this.steps
      .run(async () => {
        const current = this.stored.current;
        if (current && current.expiresAt - Date.now() < RENEW_AHEAD_MS) await this.renew();
        else if (!current && this.options.guest) await this.signInAsGuest();
        else this.scheduleRenewal();
      }, true)
      .then(() => undefined);
    return this.loading;
  }

  /**
   * A token to send now: waits for the first load, renews when the current one is about to
   * expire, and with guests on and no token tries the guest start again when it is due. Null when
   * the client has no identity (anonymous calls).
   */
  async validToken(): Promise<string | null> {
    await this.ready();
    // Not while a sign-in is out: it was sent without a guest, and a guest made now would be left behind.
    if (!this.stored.current && this.options.guest && !this.signingIn && this.guestRetries.due())
      await this.startGuestAgain();
    const current = this.stored.current;
    if (current && current.expiresAt - Date.now() < 60_000) await this.renew().catch(() => undefined);
    return this.current();
  }

  /**
   * The server refused our token (401): renew it once. Resolves true when a different token is
   * now available (the caller may retry), false otherwise.
   */
  async handleUnauthorized(refused: string | null): Promise<boolean> {
    // A sign-in retires the guest (closing its sockets) before its answer arrives: wait for it, or
    // the refused guest token would be renewed into a new guest that replaces the account.
    await this.signingIn?.catch(() => undefined);
    if (refused === null || refused !== this.current() || this.adoptStored(refused))
      return this.current() !== refused;
    await this.renew().catch(() => undefined);
    return this.current() !== refused;
  }

  /** Renews the current token (single flight). A refused renewal ends the session. */
  private renew(): Promise<void> {
    this.renewing ??= (async () => {
      const current = this.stored.current;
      if (!current || this.adoptStored(current.token)) return;
      try {
        const issued = await this.routes.renew(current.token);
        this.save({ ...this.stored, current: issued });
      } catch (error) {
        if (!isPlatformError(error, "unauthorized")) throw error;
        // The session is over (too old, or a guest that was upgraded elsewhere, maybe by a
        // sign-in in another tab, whose account then wins over a new guest).
        if (this.adoptStored(current.token)) return;
        if (!this.options.guest) {
          this.save({ ...this.stored, current: null });
          this.steps.publish(false, error);
          throw error;
        }
        let guest: IssuedToken;
        try {
          guest = await this.guestRetries.track(this.routes.guest());
        } catch (refused) {
          // No guest to fall back on (a restricted deployment gives none): the session ends, shown
          // signed out with the refusal, instead of a dead token that every call renews again.
          if (this.adoptStored(current.token)) return;
          this.save({ ...this.stored, current: null });
          this.steps.publish(false, isPlatformError(refused) ? refused : null);
          throw refused;
        }
        if (this.adoptStored(current.token)) return;
        this.save({ ...this.stored, current: guest });
        this.steps.publish();
      }
    })().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  private scheduleRenewal(): void {
    clearTimeout(this.renewTimer);
    const current = this.stored.current;
    if (!current || this.closed) return;
    this.renewTimer = renewalTimer(current.expiresAt, () => {
      void this.steps.run(() => this.renew()).catch(() => undefined);
    });
  }

  /**
   * Starts the guest a failed start left out (single flight), unless another tab stored a token
   * meanwhile or a sign-in here finished first.
   */
  private startGuestAgain(): Promise<void> {
    this.guestStarting ??= this.steps
      .run(async () => {
        if (this.adoptStored("")) return;
        const issued = await this.guestRetries.track(this.routes.guest());
        if (this.stored.current || this.adoptStored("")) return;
        this.save({ ...this.stored, current: issued });
      })
      .catch(() => undefined)
      .finally(() => {
        this.guestStarting = null;
      });
    return this.guestStarting;
  }

  /** Starts a new protected guest session (replacing any current identity). */
  async signInAsGuest(): Promise<ClientIdentity> {
    const issued = await this.guestRetries.track(this.routes.guest());
    this.save({ ...this.stored, current: issued });
    this.steps.publish();
    return identityOf(issued) as ClientIdentity;
  }

  /**
   * Finishes an account sign-in: the request carries the guest's token (current or pending) so
   * the host upgrades that guest. If the upgrade fails, the guest's token is kept as pending and
   * sent again by the next sign-in.
   */
  private async signInAccount(route: string, body: unknown): Promise<ClientIdentity> {
    await this.ready();
    const guestToken =
      this.stored.current?.kind === "guest" ? this.stored.current.token : (this.stored.pendingGuest ?? null);
    let issued: IssuedToken;
    const answer = this.routes.signIn(route, body, guestToken);
    this.signingIn = answer;
    try {
      issued = await answer;
    } catch (error) {
      if (guestToken) this.save({ ...this.stored, pendingGuest: guestToken });
      throw error;
    } finally {
      if (this.signingIn === answer) this.signingIn = null;
    }
    const { pendingGuest: _done, ...rest } = this.stored;
    this.save({ ...rest, current: issued });
    return identityOf(issued) as ClientIdentity;
  }

  /**
   * Sends a one-time sign-in code to `email`. The host answers an attempt handle, kept in memory
   * for `verifyEmailCode`: the code works only together with it (only where it was requested), and
   * whether it sent a new code (see AuthClient.startEmailSignIn).
   */
  startEmailSignIn(email: string): Promise<{ sent: boolean }> {
    return this.steps.run(async () => {
      const started = await this.routes.startEmailCode(email);
      this.emailAttempts.set(email.trim().toLowerCase(), started.attempt);
      return { sent: started.sent !== false };
    }) as Promise<{ sent: boolean }>;
  }

  /** Signs in with the code that was emailed; a guest's data moves to the account. */
  verifyEmailCode(email: string, code: string): Promise<ClientIdentity> {
    return this.steps.run(async () => {
      const key = email.trim().toLowerCase();
      const attempt = this.emailAttempts.get(key);
      if (!attempt)
        throw new PlatformError("bad_request", `Call startEmailSignIn(${JSON.stringify(email)}) first.`);
      const identity = await this.signInAccount("email/verify", { email, code, attempt });
      this.emailAttempts.delete(key);
      return identity;
    }) as Promise<ClientIdentity>;
  }

  /** Signs in with an OpenID Connect ID token of an issuer the host trusts. */
  signInWithIdToken(idToken: string): Promise<ClientIdentity> {
    return this.steps.run(() => this.signInAccount("oidc", { idToken })) as Promise<ClientIdentity>;
  }

  /** `platform dev` only: signs in as the account of `email` at once. */
  devSignIn(email: string): Promise<ClientIdentity> {
    return this.steps.run(() => this.signInAccount("dev-sign-in", { email })) as Promise<ClientIdentity>;
  }

  /**
   * Ends the session on the host (its token and renewals stop working, copies included) and
   * forgets it; with guests enabled a new guest session starts. Offline, it is forgotten here only.
   */
  async signOut(): Promise<void> {
    const token = this.current();
    this.save({ current: null });
    this.steps.publish();
    if (token) await this.routes.signOut(token).catch(() => undefined);
    if (this.options.guest) await this.steps.run(() => this.signInAsGuest());
  }

  /** Runs the last failed auth step again (`retryAuth()`); resolves when it is done. */
  retry(): Promise<void> {
    return this.steps.retry();
  }

  /** Stops the renewal timer. */
  close(): void {
    this.closed = true;
    clearTimeout(this.renewTimer);
  }
}
