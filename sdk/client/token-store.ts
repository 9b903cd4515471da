import type { ClientIdentity } from "./auth-types.js";
import type { KeyValueStore } from "./transport.js";

/** A token as the host issues it. */
export interface IssuedToken extends ClientIdentity {
  token: string;
  /**
   * When the token expires, in milliseconds since the epoch on this device's clock (the host's
   * value moved to it, see token-expiry.ts: the two clocks may be hours apart).
   */
  expiresAt: number;
}

/** What is kept per deployment in the token store. */
export interface StoredAuth {
  current: IssuedToken | null;
  /**
   * The guest token of an upgrade that did not finish (for example the app's hook threw): it is
   * sent again with the next sign-in, which then finishes the upgrade (docs/client.md "Identity").
   */
  pendingGuest?: string;
}

/**
 * A deployment's tokens in the client's key-value store (`localStorage` in browsers), under one
 * key per deployment origin. A corrupt entry reads as no session; a store that refuses writes
 * (full, or disabled in private browsing) leaves the session working in memory only.
 */
export class TokenStore {
  private readonly key: string;

  constructor(
    private readonly store: KeyValueStore,
    baseUrl: string,
  ) {
    this.key = `platform.auth:${baseUrl}`;
  }

  /** The stored session, or none. */
  read(): StoredAuth {
    try {
      const raw = this.store.get(this.key);
      const parsed = raw ? (JSON.parse(raw) as StoredAuth) : null;
      if (parsed && (parsed.current === null || typeof parsed.current?.token === "string")) return parsed;
    } catch {
      // A corrupt entry is dropped; the client starts over.
    }
    return { current: null };
  }

  /** Keeps `next` as the stored session (best effort); false when the store refused it. */
  write(next: StoredAuth): boolean {
    try {
      this.store.set(this.key, JSON.stringify(next));
      return true;
    } catch {
      // Storage may be full or disabled (private browsing): the session still works in memory.
      return false;
    }
  }
}
