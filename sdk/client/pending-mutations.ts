import { LIMITS } from "../protocol/limits.js";
import { PlatformError } from "../values/index.js";
import { errorFromWire } from "./errors.js";
import type { SocketLike } from "./transport.js";

interface PendingMutation {
  /** The message, with the mutation's idempotency key: resent as it is after a lost answer. */
  message: string;
  /** Who was signed in when it was made (null: nobody yet); see {@link PendingMutations.send}. */
  madeAs: string | null;
  /** Who it was first sent as: the host keeps its key per user, so it is only ever resent as them. */
  sentAs?: string | null;
  resolve: (value: unknown) => void;
  reject: (error: PlatformError) => void;
  /** Sent on the current socket. */
  sent: boolean;
  /** When it was first sent (0: not yet); it is resent until {@link LIMITS.callRetryMs} after. */
  firstSentMs: number;
  /** Fails it if it is still not sent {@link LIMITS.callRetryMs} after it was made. */
  unsentTimer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * A sync connection's mutations until their answers come: sent on the open socket, sent again
 * with their idempotency keys on the next one after an answer was lost (for up to
 * {@link LIMITS.callRetryMs}), and only ever as the user they belong to. One that could not be sent
 * at all within {@link LIMITS.callRetryMs} of being made (no socket would open) fails then too.
 */
export class PendingMutations {
  private readonly pending = new Map<string, PendingMutation>();

  /** How many wait for an answer. */
  get size(): number {
    return this.pending.size;
  }

  /** Adds mutation `id` (its whole message), made while `madeAs` was signed in; settles with its answer. */
  add(id: string, message: string, madeAs: string | null): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const unsentTimer = setTimeout(() => {
        if (this.pending.get(id)?.firstSentMs !== 0) return;
        this.settle(id)?.reject(
          new PlatformError(
            "unavailable",
            `The mutation could not be sent within ${LIMITS.callRetryMs / 1000} s: no connection to the host opened. It was not applied.`,
          ),
        );
      }, LIMITS.callRetryMs);
      this.pending.set(id, { message, madeAs, resolve, reject, sent: false, firstSentMs: 0, unsentTimer });
    });
  }

  /** Removes mutation `id` (it settles now) and stops its timer; undefined when it is gone already. */
  private settle(id: string): PendingMutation | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    clearTimeout(pending.unsentTimer);
    this.pending.delete(id);
    return pending;
  }

  /**
   * Sends mutation `id` on `socket`, opened as `socketUser`, unless that user is not the one it
   * belongs to: the one it was first sent as (a resend as another user would apply it again, as
   * them), or the one who made it (made while signed out, it may go as whoever signs in). Then it
   * fails with `conflict` instead.
   */
  send(socket: SocketLike, socketUser: string | null, id: string): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    const sentBefore = pending.firstSentMs > 0;
    const belongsTo = sentBefore ? pending.sentAs : pending.madeAs;
    if (belongsTo !== socketUser && (sentBefore || belongsTo !== null)) {
      this.settle(id);
      pending.reject(
        new PlatformError(
          "conflict",
          sentBefore
            ? "The signed-in user changed before the mutation was confirmed: it may or may not have been applied as the user before, and was not sent again as the new one."
            : "The signed-in user changed before the mutation was sent: it was not applied; run it again if the new user should.",
        ),
      );
      return;
    }
    pending.sent = true;
    if (!sentBefore) {
      pending.firstSentMs = Date.now();
      pending.sentAs = socketUser;
      clearTimeout(pending.unsentTimer);
    }
    socket.send(pending.message);
  }

  /** Sends every mutation not sent on `socket` yet (it just opened). */
  sendUnsent(socket: SocketLike, socketUser: string | null): void {
    for (const [id, pending] of this.pending) if (!pending.sent) this.send(socket, socketUser, id);
  }

  /**
   * The socket closed: every mutation goes again on the next one, except those first sent longer
   * than {@link LIMITS.callRetryMs} ago, which fail with `unavailable`.
   */
  socketLost(now = Date.now()): void {
    for (const [id, pending] of this.pending) {
      pending.sent = false;
      if (pending.firstSentMs === 0 || now - pending.firstSentMs < LIMITS.callRetryMs) continue;
      this.settle(id);
      pending.reject(
        new PlatformError(
          "unavailable",
          "The connection closed before the mutation was confirmed; it may or may not have been applied.",
        ),
      );
    }
  }

  /** Settles mutation `id` with its answer (a value, or the host's error). */
  answer(id: string, message: { value?: unknown; error?: unknown }): void {
    const pending = this.settle(id);
    if (!pending) return;
    if (message.error !== undefined) pending.reject(errorFromWire(message.error));
    else pending.resolve(message.value ?? null);
  }

  /** Fails every mutation with `error` (the client closed). */
  failAll(error: PlatformError): void {
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(error);
  }
}
