/**
 * The public shapes of a client's identity: what `client.auth` offers and what `useAuth()` shows.
 * The implementation is `AuthSession` (auth-session.ts).
 */
import type { PlatformError } from "../values/index.js";

/** Who the client is signed in as. */
export interface ClientIdentity {
  userId: string;
  kind: "guest" | "account";
  email?: string;
}

/** What `useAuth()` shows (docs/client.md: `isLoading`, `isSignedIn`, `error`). */
export interface AuthState {
  /** True until the first token is ready (loaded, renewed or a new guest). */
  isLoading: boolean;
  /** True when signed in with an account (a guest is not signed in). */
  isSignedIn: boolean;
  identity: ClientIdentity | null;
  /** The last sign-in or renewal failure; `retryAuth()` tries that step again. */
  error: PlatformError | null;
}

/** Sign-in and identity of a client (one deployment). */
export interface ClientAuth {
  /** The current state (the object `useAuth()` returns). */
  getState(): AuthState;
  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  /** Waits until the first token is ready (or failed: see `getState().error`). */
  ready(): Promise<void>;
  signInAsGuest(): Promise<ClientIdentity>;
  /**
   * Emails a one-time code. `sent: false`: the address had all the codes it may get lately (others
   * may have asked for it), so no new mail was sent; the newest code it received works here.
   */
  startEmailSignIn(email: string): Promise<{ sent: boolean }>;
  /** Signs in with the emailed code; the current guest's data moves to the account. */
  verifyEmailCode(email: string, code: string): Promise<ClientIdentity>;
  /** Signs in with an OpenID Connect ID token. */
  signInWithIdToken(idToken: string): Promise<ClientIdentity>;
  /** `platform dev` only: signs in as `email` at once. */
  devSignIn(email: string): Promise<ClientIdentity>;
  signOut(): Promise<void>;
  /** The token calls are sent with (renewed when about to expire), or null. */
  token(): Promise<string | null>;
}
