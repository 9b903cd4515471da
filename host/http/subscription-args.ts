import { PlatformError } from "../../sdk/values/index.js";
import { siteKey } from "./client-address.js";
import { FairShares, type Holding } from "./fair-shares.js";
import { SYNC_LIMITS } from "./sync-messages.js";

/**
 * The arguments subscriptions keep, by a key shared by many connections: each client address's
 * (a client may open many sockets, each with its own {@link SubscriptionArgs}: 15 of them held
 * 103 MB).
 */
export class KeptArgs {
  private readonly bytes = new Map<string, number>();

  /** What the connections of `key` keep, and how one moves it. */
  of(key: string): ArgsShare {
    return {
      kept: () => this.bytes.get(key) ?? 0,
      move: (delta) => {
        const now = (this.bytes.get(key) ?? 0) + delta;
        if (now > 0) this.bytes.set(key, now);
        else this.bytes.delete(key);
      },
    };
  }
}

/** One key's share in {@link KeptArgs}. */
export interface ArgsShare {
  kept(): number;
  move(delta: number): void;
}

/** One client address's place in a deployment's room for subscriptions ({@link SubscriptionRooms}). */
export interface RoomPlace {
  /**
   * Takes `bytes` for one subscription, which `end` ends when another client needs its room: how
   * to give them back, or null when they do not fit.
   */
  take(bytes: number, end: () => void): (() => void) | null;
}

/**
 * Each deployment's room for its subscriptions' arguments on this host (`deploymentArgsBytes`, all
 * clients together), shared fairly between client addresses: once it is full, an address within
 * an even share still subscribes, in place of subscriptions kept for a second or more
 * (`LIMITS.heldStalledMs`) by the addresses above an even share, heaviest first, oldest first
 * ({@link FairShares}). Refused otherwise. With a bound only, four addresses' 16 MiB each filled it
 * on purpose, and nobody else could subscribe to that app until they left. An IPv6 client shares
 * by its /48 here ({@link siteKey}): with a share per /64, one site's 65,536 of them holding a
 * subscription each would bring the share down to one subscription and end everyone's others.
 */
export class SubscriptionRooms {
  private readonly rooms = new Map<string, FairShares>();

  /** `now`: the clock a subscription's age is read on (ms; one that never jumps). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The place in `deployment`'s room of the client at `address` (its key, as the per-address limits take it). */
  place(deployment: string, address: string): RoomPlace {
    const site = siteKey(address);
    return { take: (bytes, end) => this.take(deployment, site, bytes, end) };
  }

  /** What `deployment`'s subscriptions keep, all clients together. */
  kept(deployment: string): number {
    return this.rooms.get(deployment)?.held.total ?? 0;
  }

  private take(deployment: string, address: string, bytes: number, end: () => void): (() => void) | null {
    const limit = SYNC_LIMITS.deploymentArgsBytes;
    const shares = this.rooms.get(deployment) ?? new FairShares(this.now);
    const fits =
      shares.held.total + bytes <= limit ||
      (shares.withinEvenShare(address, bytes, limit) && shares.makeRoom(address, bytes, limit));
    if (!fits) {
      this.forgetEmpty(deployment, shares);
      return null;
    }
    // New, or emptied by what it ended (a subscription as large as the room): the deployment's.
    this.rooms.set(deployment, shares);
    const takenAt = this.now();
    let given = false;
    const giveBack = () => {
      if (given) return;
      given = true;
      shares.held.remove(address, bytes);
      shares.untrack(address, holding);
      this.forgetEmpty(deployment, shares);
    };
    const holding: Holding = {
      bytes,
      droppable: true,
      movedAt: () => takenAt,
      drop: () => {
        giveBack();
        end();
      },
    };
    shares.track(address, holding);
    shares.held.add(address, bytes);
    return giveBack;
  }

  private forgetEmpty(deployment: string, room: FairShares): void {
    if (room.held.total === 0 && this.rooms.get(deployment) === room) this.rooms.delete(deployment);
  }
}

const UNBOUNDED_SHARE: ArgsShare = { kept: () => 0, move: () => {} };
const UNBOUNDED_ROOM: RoomPlace = { take: () => () => {} };

/** The arguments one connection's subscriptions keep, bounded by {@link SYNC_LIMITS}. */
export class SubscriptionArgs {
  private readonly kept = new Map<string, { bytes: number; giveBack: () => void }>();
  private total = 0;

  constructor(
    /** What all connections of the client's address keep. */
    private readonly address: ArgsShare = UNBOUNDED_SHARE,
    /** The client's place in the deployment's room. */
    private readonly room: RoomPlace = UNBOUNDED_ROOM,
  ) {}

  /**
   * Counts subscription `id` with its query `name` and arguments, or refuses it when it does not
   * fit: `bad_request` past the client's own bounds, `unavailable` past the deployment's room
   * (others' subscriptions fill it; room frees as they leave). `ended` is called when the
   * subscription's room is taken for another client's (its count given back already). An id kept
   * already gives its room back first: it counts once, as its release gives back once.
   */
  keep(id: string, name: string, argsJson: string, ended: () => void = () => {}): void {
    this.release(id);
    const bytes = Math.max(
      SYNC_LIMITS.subscriptionBytesAtLeast,
      Buffer.byteLength(id) + Buffer.byteLength(name) + Buffer.byteLength(argsJson),
    );
    if (
      bytes > SYNC_LIMITS.subscriptionArgsBytes ||
      this.total + bytes > SYNC_LIMITS.subscriptionsArgsBytes ||
      this.address.kept() + bytes > SYNC_LIMITS.addressArgsBytes
    )
      throw new PlatformError(
        "bad_request",
        `Subscription ${id}'s arguments (with its id and query name) are too large: at most ${SYNC_LIMITS.subscriptionArgsBytes} bytes each, ${SYNC_LIMITS.subscriptionsArgsBytes} for all subscriptions of a connection and ${SYNC_LIMITS.addressArgsBytes} for all connections of a client address, where each subscription counts at least ${SYNC_LIMITS.subscriptionBytesAtLeast}. Pass ids, not data, and unsubscribe from what is no longer shown.`,
      );
    const entry = { bytes, giveBack: () => {} };
    const giveBack = this.room.take(bytes, () => {
      if (this.kept.get(id) === entry) this.release(id);
      ended();
    });
    if (!giveBack) throw roomFull(`Subscription ${id} was refused`);
    entry.giveBack = giveBack;
    this.kept.set(id, entry);
    this.total += bytes;
    this.address.move(bytes);
  }

  /** Gives subscription `id`'s room back. */
  release(id: string): void {
    const entry = this.kept.get(id);
    if (!entry) return;
    this.kept.delete(id);
    this.total -= entry.bytes;
    this.address.move(-entry.bytes);
    entry.giveBack();
  }

  /** Gives every subscription's room back (the connection closed). */
  releaseAll(): void {
    for (const id of [...this.kept.keys()]) this.release(id);
  }
}

/**
 * The `unavailable` error of a subscription refused (or, `what`, ended) for want of its
 * deployment's room, saying when to try again.
 */
export function roomFull(what: string): PlatformError {
  return new PlatformError(
    "unavailable",
    `${what}: this app's subscriptions on this server keep all the arguments they may (${SYNC_LIMITS.deploymentArgsBytes} bytes for all its clients together, where each subscription counts at least ${SYNC_LIMITS.subscriptionBytesAtLeast}), shared evenly between the clients' addresses. Subscribe again later, once others have left.`,
    { retryAfterSeconds: SYNC_LIMITS.fullRetryAfterSeconds },
  );
}
