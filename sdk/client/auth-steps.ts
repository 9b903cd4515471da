import { isPlatformError, PlatformError } from "../values/index.js";
import type { AuthState, ClientIdentity } from "./auth-types.js";
import { notifyEach } from "./notify-each.js";
import type { IssuedToken } from "./token-store.js";

/** Who `issued` speaks for, as `useAuth()` shows it (null: no identity). */
export function identityOf(issued: IssuedToken | null): ClientIdentity | null {
  return issued
    ? {
        userId: issued.userId,
        kind: issued.kind,
        ...(issued.email ? { email: issued.email } : {}),
      }
    : null;
}

/**
 * What `useAuth()` shows of a session, and the auth steps that change it (the first load, a
 * renewal, a sign-in): each runs through {@link AuthSteps.run}, which shows whether it failed, and
 * a failed one is kept so that `retryAuth()` runs the same step again. The state is one object
 * until something changes, as `useSyncExternalStore` needs.
 */
export class AuthSteps {
  private state: AuthState;
  private readonly listeners = new Set<() => void>();
  private lastFailed: (() => Promise<unknown>) | null = null;

  /** `current` gives the session's token now; the state starts loading. */
  constructor(private readonly current: () => IssuedToken | null) {
    this.state = this.stateOf(true, null);
  }

  private stateOf(isLoading: boolean, error: PlatformError | null): AuthState {
    const current = this.current();
    return { isLoading, isSignedIn: current?.kind === "account", identity: identityOf(current), error };
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

  /** Shows the session's token now, with `isLoading` and `error`, to every listener. */
  publish(isLoading = false, error: PlatformError | null = null): void {
    this.state = this.stateOf(isLoading, error);
    notifyEach(this.listeners);
  }

  /**
   * Runs one auth step with its outcome published: on failure the error is shown in the state and
   * remembered, so `retryAuth()` can run the same step again. The `initial` step (the first load)
   * shows loading first, and resolves undefined when it fails instead of throwing.
   */
  async run<T>(step: () => Promise<T>, initial = false): Promise<T | undefined> {
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

  /** Runs the last failed step again (`retryAuth()`); resolves when it is done. */
  async retry(): Promise<void> {
    const step = this.lastFailed;
    if (!step) return;
    await this.run(step).catch(() => undefined);
  }
}
