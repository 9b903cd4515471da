import { LIMITS } from "../protocol/limits.js";
import { SYNC_CLOSE } from "../protocol/sync-close.js";
import { SYNC_PROTOCOL, syncProtocolsFor } from "../protocol/sync-subprotocols.js";
import { PlatformError } from "../values/index.js";
import { newIdempotencyKey } from "./idempotency-key.js";
import { overMessageLimit, tooLarge } from "./message-size.js";
import { notifyEach } from "./notify-each.js";
import { PendingMutations } from "./pending-mutations.js";
import { ReconnectBackoff } from "./reconnect-backoff.js";
import type { QueryResult, SubscriptionListener } from "./subscription-table.js";
import { SyncSubscriptions } from "./sync-subscriptions.js";
import type { SocketFactory, SocketLike } from "./transport.js";
import { UpgradeRefusal } from "./upgrade-refusal.js";

export type { QueryResult, SubscriptionListener } from "./subscription-table.js";

const OPEN = 1;

/** Connection state, for status displays and tests. */
export type ConnectionState = "idle" | "connecting" | "open" | "waiting";

/**
 * One WebSocket to a deployment's `GET /api/sync`, shared by every subscription of a client.
 * Identical subscriptions (same query and arguments) share one server subscription. When the
 * socket drops it reconnects with exponential backoff (see reconnect-backoff.ts: it starts over only
 * after a socket stayed open a while) and subscribes again; mutations sent over it
 * resolve only after the host pushed what they changed (read-your-writes). When the host ends the
 * socket's identity (close code {@link SYNC_CLOSE.identityEnded}) it gets a live token first, as
 * for a refused one, then reconnects and subscribes again. Every mutation carries a random
 * idempotency key: one whose socket closed before its answer is sent again, with the same key, on
 * the next connection (the host applies it at most once), for up to {@link LIMITS.callRetryMs};
 * after that it fails with `unavailable` (it may or may not have applied). A host that shuts down
 * closes with {@link SYNC_CLOSE.hostRestarting}: the client reconnects at once, without back-off,
 * when that socket had stayed open a while (else with the backoff, as a new token's reconnect).
 * Mutations not yet sent wait for the next connection. A subscription the host refused or ended
 * saying when to try again (`retryAfterSeconds`: its app's subscriptions fill their room, the
 * request quota) subscribes again by itself then, keeping its last value meanwhile: a refusal
 * stayed until the page reloaded. A mutation is only ever sent as the user it
 * was made by, and resent as the one it was first sent as (the host knows a key per user): when the
 * signed-in user changed meanwhile it fails with `conflict` instead. Results cached for the user
 * before are forgotten when the user changes.
 */
export class SyncConnection {
  private socket: SocketLike | null = null;
  private stateValue: ConnectionState = "idle";
  private readonly subscriptions = new SyncSubscriptions({
    open: () => (this.socket?.readyState === OPEN ? this.socket : null),
    ensureConnected: () => this.ensureConnected(),
  });
  private readonly mutations = new PendingMutations();
  private nextMutationId = 1;
  private readonly backoff = new ReconnectBackoff();
  /** Sockets this client closed itself for a new identity (see {@link reconnect}). */
  private readonly closedForIdentity = new WeakSet<SocketLike>();
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** A check of the token over HTTP gave a new one since a socket last opened (see upgrade-refusal.ts). */
  private tokenChecked = false;
  /** The host took no token from the subprotocols (see connect): it goes in the URL from now on. */
  private tokenInUrl = false;
  private closed = false;
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly userChangeListeners = new Set<() => void>();
  /** The user of the socket opened last (null: anonymous), taken with its token. */
  private socketUser: string | null = null;

  constructor(
    private readonly url: string,
    private readonly openSocket: SocketFactory,
    private readonly token: () => Promise<string | null>,
    private readonly onRefused: (token: string | null) => Promise<boolean>,
    /** The user signed in now (null: nobody), as the token `token` gives belongs to. */
    private readonly user: () => string | null = () => null,
  ) {}

  /** The connection's state. */
  get state(): ConnectionState {
    return this.stateValue;
  }

  /** Calls `listener` on every state change; returns the unsubscribe function. */
  onStateChange(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /**
   * Calls `listener` when the signed-in user changed and the last user's results were forgotten
   * (what was built of them, such as a paginated list's later pages, must go too).
   */
  onUserChange(listener: () => void): () => void {
    this.userChangeListeners.add(listener);
    return () => this.userChangeListeners.delete(listener);
  }

  private setState(state: ConnectionState): void {
    if (state === this.stateValue) return;
    this.stateValue = state;
    notifyEach(this.stateListeners, state);
  }

  /** The latest result of a subscription that is active, or undefined. */
  current(name: string, argsJson: string): QueryResult | undefined {
    return this.subscriptions.current(name, argsJson);
  }

  /**
   * Subscribes to query `name` with arguments `argsJson`; `listener` gets every new outcome, value
   * or error (and the current one at once when another listener already has it). A value after an
   * error is always passed on, even when it equals the last value. Returns the unsubscribe function.
   */
  subscribe(name: string, argsJson: string, listener: SubscriptionListener): () => void {
    return this.subscriptions.subscribe(name, argsJson, listener);
  }

  /** Runs mutation `name` over the socket; resolves after its effects reached this client. */
  mutation(name: string, argsJson: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new PlatformError("unavailable", "The client was closed."));
    const id = `m${this.nextMutationId++}`;
    const message = `{"type":"mutation","id":${JSON.stringify(id)},"name":${JSON.stringify(name)},"args":${argsJson},"idempotencyKey":"${newIdempotencyKey()}"}`;
    if (overMessageLimit(message)) return Promise.reject(tooLarge("mutation"));
    const answered = this.mutations.add(id, message, this.user());
    if (this.socket?.readyState === OPEN) this.mutations.send(this.socket, this.socketUser, id);
    else this.ensureConnected();
    return answered;
  }

  /** True when there is something to keep a connection for. */
  get wanted(): boolean {
    return this.subscriptions.size > 0 || this.mutations.size > 0;
  }

  private ensureConnected(): void {
    if (this.closed || this.socket || this.stateValue === "connecting" || this.retryTimer) return;
    void this.connect();
  }

  private async connect(): Promise<void> {
    this.setState("connecting");
    const token = await this.token().catch(() => null);
    if (this.closed) return;
    const user = this.user();
    // The token travels among the socket's subprotocols, out of the URL that proxies log, when the
    // factory takes them (see SocketFactory) and the host reads it there.
    const protocols =
      token && !this.tokenInUrl && this.openSocket.length >= 2 ? syncProtocolsFor(token) : undefined;
    const url = token && !protocols ? `${this.url}?platform_token=${encodeURIComponent(token)}` : this.url;
    let socket: SocketLike;
    try {
      socket = protocols ? this.openSocket(url, protocols) : this.openSocket(url);
    } catch {
      this.backoff.ended(null);
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    const refusal = new UpgradeRefusal();
    /** When the socket opened (null: not yet): how long it lived decides the next delay. */
    let openedAt: number | null = null;
    socket.onopen = () => {
      if (protocols && socket.protocol !== SYNC_PROTOCOL) {
        // A host that did not select the protocol (an older one, or a factory that dropped the
        // protocols) took no token from them: nothing is sent here; again with it in the URL.
        this.tokenInUrl = true;
        this.socket = null;
        socket.close();
        void this.connect();
        return;
      }
      refusal.opened();
      openedAt = Date.now();
      this.socketUser = user;
      this.tokenChecked = false;
      this.setState("open");
      this.subscriptions.socketOpened();
      this.mutations.sendUnsent(socket, user);
    };
    socket.onmessage = (event) => this.receive(String(event.data), user);
    socket.onerror = (event) => {
      refusal.error(event);
      // `ws` fails an upgrade whose answer selected no protocol (a proxy that drops the header):
      // the next socket carries the token in the URL.
      if (protocols && /subprotocol/i.test(String((event as { message?: unknown } | undefined)?.message)))
        this.tokenInUrl = true;
    };
    socket.onclose = (event) => {
      refusal.closed(event?.code);
      if (this.socket !== socket) return;
      this.socket = null;
      // Unanswered mutations go again on the next socket, with their keys, while there is time.
      this.mutations.socketLost();
      if (this.closed) return;
      // The client's own close for a new identity (a sign-in, a sign-out) is no failure of the
      // host's: counted as one, switching users a few times pushed the next socket 10 s away.
      const ours = this.closedForIdentity.has(socket);
      const lived = ours ? openedAt !== null : this.backoff.ended(openedAt);
      // A host shutting down answered what it took: reconnect at once (to another host), unless
      // the socket closed soon after it opened (a host closing every socket so would be a storm).
      const atOnce = lived && (ours || event?.code === SYNC_CLOSE.hostRestarting);
      const retry = () => {
        if (!this.wanted) this.setState("idle");
        else if (atOnce) void this.connect();
        else this.scheduleReconnect();
      };
      const check = token !== null && !this.tokenChecked && refusal.unexplained;
      if (refusal.refused || check) {
        // Not "connecting" any more (a refused upgrade never opened): the session's token listener
        // reconnects with a new token, and if none came, the retry below does.
        this.setState("waiting");
        void this.onRefused(token)
          .then((replaced) => {
            if (check && replaced) this.tokenChecked = true;
          })
          .finally(() => !this.socket && this.stateValue !== "connecting" && retry());
      } else retry();
    };
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    this.setState("waiting");
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, this.backoff.delayMs());
  }

  /**
   * Reconnects with a fresh token (after sign-in, sign-out or a renewal), resubscribing
   * everything: at once after a socket that stayed open a while, else when the backoff's wait is
   * over (a host ending every socket's identity right after it opened must not get a new socket,
   * and a renewal, each time at once). Another user's cached results are forgotten first: nothing
   * shows them to the new one.
   */
  reconnect(): void {
    if (this.user() !== this.socketUser) {
      this.subscriptions.forgetResults();
      notifyEach(this.userChangeListeners);
    }
    // A new token: tried among the subprotocols again (the host may have been upgraded since).
    this.tokenInUrl = false;
    const socket = this.socket;
    if (socket) {
      this.closedForIdentity.add(socket);
      socket.close(1000, "new identity");
    } else if (!this.wanted || this.stateValue === "connecting" || this.retryTimer) return;
    else if (this.backoff.healthy) void this.connect();
    else this.scheduleReconnect();
  }

  /**
   * Handles a message of a socket opened as `user` (a closing one's may still arrive). What is not
   * a JSON object (`null`, a number, garbage) is ignored: reading its fields would throw inside the
   * socket's handler.
   */
  private receive(text: string, user: string | null): void {
    let message: { type?: string; id?: string; value?: unknown; error?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (typeof message !== "object" || message === null) return;
    if (message.type === "mutationResult" && typeof message.id === "string") {
      this.mutations.answer(message.id, message);
      return;
    }
    // A result for the user before (on the socket closing for the new one) is not the new user's.
    if (user !== this.user()) return;
    this.subscriptions.receive(message);
  }

  /** Closes the socket for good; pending mutations fail with `unavailable`. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.subscriptions.close();
    this.mutations.failAll(new PlatformError("unavailable", "The client was closed."));
    this.socket?.close(1000, "client closed");
    this.socket = null;
    this.setState("idle");
  }
}
