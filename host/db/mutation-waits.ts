import { PlatformError } from "../../sdk/values/index.js";
import type { QueuedMutation } from "./group-commit-host.js";

/**
 * How long each of a deployment's mutations waits for the database (`LIMITS.mutationWaitMs`):
 * first to start (queued, or in a group waiting for its developer's turn and the write lock), then,
 * once its writes are in a batch, for that batch's commit (and those before it) to be confirmed.
 * A database that stopped answering (a frozen server, a network that drops everything) would
 * otherwise hold every caller for as long as it stays so. Past the bound the mutation is answered `503 unavailable`, saying whether it may
 * have been written; the host goes on, and the work waiting on the database ends when it answers.
 * A running member is bounded by its handler's limits, and its round trips by the store's own (on
 * PostgreSQL, kv/postgres-silence.ts), not by this.
 */
export class MutationWaits {
  /** Each member's timer while it waits to start or for its commit. */
  private readonly timers = new Map<QueuedMutation, NodeJS.Timeout>();

  constructor(
    private readonly waitMs: number,
    /** Takes a member that waited too long out of the queue, if it is there. */
    private readonly dequeue: (member: QueuedMutation) => void,
  ) {}

  /** `member`, answered `unavailable` unless it {@link starts} within the bound. */
  bound(member: QueuedMutation): QueuedMutation {
    const bounded: QueuedMutation = Object.assign({}, member, {
      resolve: (result: Parameters<QueuedMutation["resolve"]>[0]) => {
        this.stop(bounded);
        member.resolve(result);
      },
      reject: (error: unknown) => {
        this.stop(bounded);
        member.reject(error);
      },
    });
    this.wait(bounded, () => {
      this.dequeue(bounded);
      bounded.reject(notStarted(this.waitMs));
    });
    return bounded;
  }

  /** True when `member` may run now: it was not answered for waiting too long (it never runs then). */
  starts(member: QueuedMutation): boolean {
    if (!this.timers.has(member)) return false;
    this.stop(member);
    return true;
  }

  /** `member`'s batch is committing: it is answered `unavailable` unless the commit is confirmed within the bound. */
  committing(member: QueuedMutation): void {
    this.wait(member, () =>
      member.reject(notConfirmed(`within ${seconds(this.waitMs)} (busy, or not answering)`)),
    );
  }

  private wait(member: QueuedMutation, expire: () => void): void {
    this.stop(member);
    this.timers.set(member, setTimeout(expire, this.waitMs).unref());
  }

  private stop(member: QueuedMutation): void {
    const timer = this.timers.get(member);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(member);
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function notStarted(waitMs: number): PlatformError {
  return new PlatformError(
    "unavailable",
    `This mutation waited ${seconds(waitMs)} for the database (busy, or not answering) and did not run: nothing was written. Retry later.`,
    { retryAfterSeconds: 1 },
  );
}

/**
 * What a mutation whose commit was sent but not confirmed gets (`why`: what happened instead); the
 * commit may still land.
 */
export function notConfirmed(why: string, cause?: unknown): PlatformError {
  return new PlatformError(
    "unavailable",
    `The database did not confirm this mutation's commit ${why}: it may or may not have been written. Check before you retry it, or retry it with the same Idempotency-Key.`,
    { retryAfterSeconds: 1, cause },
  );
}
