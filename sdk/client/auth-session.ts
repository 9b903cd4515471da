import { isPlatformError, PlatformError } from "../values/index.js";
import type { AuthState, ClientIdentity } from "./auth-types.js";
import { readResponse, unreachable } from "./errors.js";
import { type IssuedToken, type StoredAuth, TokenStore } from "./token-store.js";
import type { FetchFunction, KeyValueStore } from "./transport.js";

/** Renew this long before a token expires. */
const RENEW_AHEAD_MS = 5 * 60 * 1000;

/**
 * The client's identity for one deployment: the stored token, renewed before it expires; a
 * protected guest created on first use (when enabled); account sign-in by email code, OpenID
 * Connect ID token or (in `platform dev`) at once, each presenting the guest's token so the host
 * moves the guest's data to the account. Tokens are kept per deployment origin.
 */
export class AuthSession {
  private stored: StoredAuth;
  private state: AuthState;
  private readonly listeners = new Set<() => void>();
  private readonly tokenListeners = new Set<() => void>();
  private loading: Promise<void> | null = null;
  private renewing: Promise<void> | null = null;
  /** An account sign-in whose answer has not arrived yet. */
  private signingIn: Promise<unknown> | null = null;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private lastFailed: (() => Promise<unknown>) | null = null;
  /** The attempt handle of each email's pending code (lower-cased email -> handle). */
  private readonly emailAttempts = new Map<string, string>();
  private closed = false;
  private readonly tokens: TokenStore;
  /** The token the store held when this client last read or wrote it (see {@link adoptStored}). */
  private inStore: string | null;

  constructor(
    private readonly baseUrl: string,
    private readonly fetch: FetchFunction,
    store: KeyValueStore,
    private readonly options: { guest: boolean },
  ) {
    this.tokens = new TokenStore(store, baseUrl);
    this.stored = this.tokens.read();
    this.inStore = this.current();
    this.state = this.stateOf(this.stored.current, true, null);
  }

  private stateOf(current: IssuedToken | null, isLoading: boolean, error: PlatformError | null): AuthState {
    const identity = current
      ? {
          userId: current.userId,
          kind: current.kind,
          ...(current.email ? { email: current.email } : {}),
        }
      : null;
    return { isLoading, isSignedIn: current?.kind === "account", identity, error };
  }

  private publish(isLoading = false, error: PlatformError | null = null): void {
    this.state = this.stateOf(this.stored.current, isLoading, error);
    for (const listener of [...this.listeners]) listener();
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
    return this.state;
  }

  /** Calls `listener` whenever the state changes; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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
    this.publish();
    for (const listener of [...this.tokenListeners]) listener();
    return true;
  }

  /** Loads the session once: renews a stored token that is about to expire, or starts a guest. */
  ready(): Promise<void> {
    this.loading ??= this.attempt(async () => {
      const current = this.stored.current;
      if (current && current.expiresAt - Date.now() < RENEW_AHEAD_MS) await this.renew();
      else if (!current && this.options.guest) await this.signInAsGuest();
      else this.scheduleRenewal();
    }, true).then(() => undefined);
    return this.loading;
  }

  /**
   * A token to send now: waits for the first load, renews when the current one is about to
   * expire. Null when the client has no identity (anonymous calls).
   */
  async validToken(): Promise<string | null> {
    await this.ready();
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

  private async post(path: string, body: unknown, bearer?: string | null): Promise<unknown> {
    const url = `${this.baseUrl}/__platform/auth/${path}`;
    let response: Response;
    try {
      response = await this.fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: JSON.stringify(body ?? {}),
      });
    } catch (error) {
      throw unreachable(url, error);
    }
    return readResponse(response);
  }

  /**
   * Runs one auth step with its outcome published: on failure the error is shown in the state and
   * remembered, so `retryAuth()` can run the same step again.
   */
  private async attempt<T>(step: () => Promise<T>, initial = false): Promise<T | undefined> {
    if (initial) this.publish(true, null);
    try {
      const result = await step();
      this.lastFailed = null;
      this.publish(false, null);
      return result;
    } catch (error) {
      const failure = isPlatformError(error)
        ? error
        : new PlatformError("internal", String((error as Error)?.message ?? error));
      this.lastFailed = step;
      this.publish(false, failure);
      if (!initial) throw failure;
      return undefined;
    }
  }

  /** Renews the current token (single flight). A refused renewal ends the session. */
  private renew(): Promise<void> {
    this.renewing ??= (async () => {
      const current = this.stored.current;
      if (!current || this.adoptStored(current.token)) return;
      try {
        const issued = (await this.post("renew", {}, current.token)) as IssuedToken;
        this.save({ ...this.stored, current: issued });
      } catch (error) {
        if (!isPlatformError(error, "unauthorized")) throw error;
        // The session is over (too old, or a guest that was upgraded elsewhere, maybe by a
        // sign-in in another tab, whose account then wins over a new guest).
        if (this.adoptStored(current.token)) return;
        if (!this.options.guest) {
          this.save({ ...this.stored, current: null });
          throw error;
        }
        const guest = (await this.post("guest", {})) as IssuedToken;
        if (this.adoptStored(current.token)) return;
        this.save({ ...this.stored, current: guest });
        this.publish();
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
    const delay = Math.max(1000, current.expiresAt - Date.now() - RENEW_AHEAD_MS);
    this.renewTimer = setTimeout(
      () => void this.attempt(() => this.renew()).catch(() => undefined),
      Math.min(delay, 2 ** 31 - 1),
    );
    (this.renewTimer as { unref?: () => void }).unref?.();
  }

  /** Starts a new protected guest session (replacing any current identity). */
  async signInAsGuest(): Promise<ClientIdentity> {
    const issued = (await this.post("guest", {})) as IssuedToken;
    this.save({ ...this.stored, current: issued });
    this.publish();
    return this.stateOf(issued, false, null).identity as ClientIdentity;
  }

  /**
   * Finishes an account sign-in: the request carries the guest's token (current or pending) so
   * the host upgrades that guest. If the upgrade fails, the guest's token is kept as pending and
   * sent again by the next sign-in.
   */
  private async signInAccount(path: string, body: unknown): Promise<ClientIdentity> {
    await this.ready();
    const guestToken =
      this.stored.current?.kind === "guest" ? this.stored.current.token : (this.stored.pendingGuest ?? null);
    let issued: IssuedToken;
    const answer = this.post(path, body, guestToken);
    this.signingIn = answer;
    try {
      issued = (await answer) as IssuedToken;
    } catch (error) {
      if (guestToken) this.save({ ...this.stored, pendingGuest: guestToken });
      throw error;
    } finally {
      if (this.signingIn === answer) this.signingIn = null;
    }
    const { pendingGuest: _done, ...rest } = this.stored;
    this.save({ ...rest, current: issued });
    return this.stateOf(issued, false, null).identity as ClientIdentity;
  }

  /**
   * Sends a one-time sign-in code to `email`. The host answers an attempt handle, kept in memory
   * for `verifyEmailCode`: the code works only together with it (only where it was requested), and
   * whether it sent a new code (see AuthClient.startEmailSignIn).
   */
  startEmailSignIn(email: string): Promise<{ sent: boolean }> {
    return this.attempt(async () => {
      const started = (await this.post("email/start", { email })) as { attempt: string; sent?: boolean };
      this.emailAttempts.set(email.trim().toLowerCase(), started.attempt);
      return { sent: started.sent !== false };
    }) as Promise<{ sent: boolean }>;
  }

  /** Signs in with the code that was emailed; a guest's data moves to the account. */
  verifyEmailCode(email: string, code: string): Promise<ClientIdentity> {
    return this.attempt(async () => {
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
    return this.attempt(() => this.signInAccount("oidc", { idToken })) as Promise<ClientIdentity>;
  }

  /** `platform dev` only: signs in as the account of `email` at once. */
  devSignIn(email: string): Promise<ClientIdentity> {
    return this.attempt(() => this.signInAccount("dev-sign-in", { email })) as Promise<ClientIdentity>;
  }

  /**
   * Ends the session on the host (its token and renewals stop working, copies included) and
   * forgets it; with guests enabled a new guest session starts. Offline, it is forgotten here only.
   */
  async signOut(): Promise<void> {
    const token = this.current();
    this.save({ current: null });
    this.publish();
    if (token) await this.post("sign-out", {}, token).catch(() => undefined);
    if (this.options.guest) await this.attempt(() => this.signInAsGuest());
  }

  /** Runs the last failed auth step again (`retryAuth()`); resolves when it is done. */
  async retry(): Promise<void> {
    const step = this.lastFailed;
    if (!step) return;
    await this.attempt(step).catch(() => undefined);
  }

  /** Stops the renewal timer. */
  close(): void {
    this.closed = true;
    clearTimeout(this.renewTimer);
  }
}
