import type { Duplex } from "node:stream";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { membersMoreThan, opensMoreThan } from "../json-shape.js";

/**
 * Per connection: at most this many subscriptions, this much unsent data before it is dropped, and
 * this much of subscriptions' arguments (each subscription keeps its arguments for its re-runs: a
 * thousand of 1 MiB each kept 2 GiB of the host's memory for one anonymous socket).
 */
export const SYNC_LIMITS = {
  subscriptions: 1000,
  bufferedBytes: 4 * 1024 * 1024,
  /** As a request body: platform/client refuses a larger message before sending it. */
  messageBytes: LIMITS.requestBodyBytes,
  /** What one subscription keeps: its id, query name and arguments (bytes). */
  subscriptionArgsBytes: 64 * 1024,
  /**
   * What a subscription counts at least against the bounds below, however short its arguments:
   * about what the host holds for it (its subscriber, pushes and bookkeeping, some 880 bytes), so
   * that a client address holds at most 16,384 subscriptions on a host, all connections together.
   * Counted as its arguments alone (about 10 bytes), an address could hold a million, and each
   * commit touching their query handed its result to every one of them in one stretch of the main
   * thread (40,000 of them took 387-443 ms a commit).
   */
  subscriptionBytesAtLeast: 1024,
  /** Characters of a message's id (the client's own, echoed in every answer to it). */
  idChars: 256,
  /** Characters of a subscribe or mutation message's `name`. */
  nameChars: 1024,
  subscriptionsArgsBytes: 4 * 1024 * 1024,
  /** Arguments kept by all connections of one client address together. */
  addressArgsBytes: 16 * 1024 * 1024,
  /**
   * Arguments kept by all connections to one deployment on this host together: 65,536
   * subscriptions at most, about 64 MiB of the host's memory, however many addresses a client
   * brings (an IPv6 one rotating through its /64s cheaply); each commit touching their query hands
   * its result to every one of them.
   */
  deploymentArgsBytes: 64 * 1024 * 1024,
  /** Objects and arrays one message may hold ("{" and "[", in strings too): parsing deep nesting is slow. */
  messageContainers: 65_536,
  /** What one client address's messages may bring per second, each counting 1 KiB at least (sync-guards.ts). */
  inboundBytesPerSecond: 1024 * 1024,
  /** Twice a connection's subscriptions' arguments: a client subscribing to everything at once fits. */
  inboundBurstBytes: 8 * 1024 * 1024,
  inboundMessageBytes: 1024,
  /** How long unsent data may stay above a quarter of `bufferedBytes` before the socket is dropped (ms). */
  drainMs: 30_000,
  /**
   * Unsent data of all the host's sync sockets together, counting each socket's above 64 KiB: a
   * push that would pass it waits until the data drains (sync-guards.ts, sync-pushes.ts).
   */
  hostUnsentBytes: 256 * 1024 * 1024,
  /**
   * Every socket is pinged this often, and one that has not answered the ping before it is ended
   * (ms): a client gone without a word is let go within one to two periods.
   */
  pingEveryMs: 30_000,
} as const;

/** A message of the sync protocol's client, as read (its fields still to check). */
export type ClientMessage =
  | { type: "subscribe"; id: string; name: string; args?: unknown }
  | { type: "unsubscribe"; id: string }
  | { type: "mutation"; id: string; name: string; args?: unknown; idempotencyKey?: unknown };

/** A client's message read from its text; `bad_request` when it is not a JSON object. */
export function readClientMessage(data: unknown): ClientMessage {
  const text = String(data);
  if (text.length > SYNC_LIMITS.messageContainers && opensMoreThan(text, SYNC_LIMITS.messageContainers))
    throw new PlatformError(
      "bad_request",
      `A message holds more than ${SYNC_LIMITS.messageContainers} objects and arrays. Split it, or pass ids, not data.`,
    );
  if (text.length > LIMITS.jsonMembers && membersMoreThan(text, LIMITS.jsonMembers))
    throw new PlatformError(
      "bad_request",
      `A message holds more than ${LIMITS.jsonMembers} object members. Split it, or pass ids, not data.`,
    );
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw new PlatformError("bad_request", "Messages must be JSON.");
  }
  if (typeof message !== "object" || message === null || Array.isArray(message))
    throw new PlatformError("bad_request", "Messages must be JSON objects with a type.");
  return message as ClientMessage;
}

/** What a client is told of a message whose type the protocol has not got (naming that type). */
export function unknownMessageType(message: ClientMessage): string {
  const type = JSON.stringify((message as { type?: unknown }).type)?.slice(0, 64) ?? "none";
  return `Unknown message type ${type}: send subscribe, unsubscribe or mutation.`;
}

/**
 * A refusal of `message` answered to its id the way the client waits for it: a mutation's result,
 * or an error for any other message.
 */
function refusal(message: ClientMessage, id: unknown, text: string): object {
  const error = { code: "bad_request", message: text };
  return { type: message.type === "mutation" ? "mutationResult" : "error", id, error };
}

/**
 * The reply to a message whose id or name is longer than {@link SYNC_LIMITS} allows (an overlong id
 * is not echoed), or undefined when both fit.
 */
export function overlong(message: ClientMessage): object | undefined {
  const { id, name } = message as { id?: unknown; name?: unknown };
  if (typeof id === "string" && id.length > SYNC_LIMITS.idChars)
    return {
      type: "error",
      error: { code: "bad_request", message: `A message id is at most ${SYNC_LIMITS.idChars} characters.` },
    };
  if (typeof name !== "string" || name.length <= SYNC_LIMITS.nameChars) return undefined;
  return refusal(message, id, `A query or mutation name is at most ${SYNC_LIMITS.nameChars} characters.`);
}

/**
 * The reply to a subscribe or mutation message whose `name` is not a string (as its `error`, or its
 * `mutationResult`), or undefined for any other message.
 */
export function nameMissing(message: ClientMessage, id: string): object | undefined {
  if ((message.type !== "subscribe" && message.type !== "mutation") || typeof message.name === "string")
    return undefined;
  const handler = message.type === "subscribe" ? "query" : "mutation";
  return refusal(
    message,
    id,
    `A ${message.type} message needs "name": the name of a ${handler} of the capsule, as a string.`,
  );
}

/**
 * The arguments subscriptions keep, by a key shared by many connections: each client address's
 * (a client may open many sockets, each with its own {@link SubscriptionArgs}: 15 of them held
 * 103 MB), or each deployment's.
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

const UNBOUNDED: ArgsShare = { kept: () => 0, move: () => {} };

/** The arguments one connection's subscriptions keep, bounded by {@link SYNC_LIMITS}. */
export class SubscriptionArgs {
  private readonly bytes = new Map<string, number>();
  private total = 0;

  constructor(
    /** What all connections of the client's address keep. */
    private readonly address: ArgsShare = UNBOUNDED,
    /** What all connections to the deployment keep. */
    private readonly deployment: ArgsShare = UNBOUNDED,
  ) {}

  /**
   * Counts subscription `id` with its query `name` and arguments, or refuses it when it does not
   * fit: `bad_request` past the client's own bounds, `unavailable` past the deployment's (others'
   * subscriptions fill it; room frees as they leave). An id kept already gives its room back
   * first: it counts once, as its release gives back once.
   */
  keep(id: string, name: string, argsJson: string): void {
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
    if (this.deployment.kept() + bytes > SYNC_LIMITS.deploymentArgsBytes)
      throw new PlatformError(
        "unavailable",
        `Subscription ${id} was refused: this app's subscriptions on this server keep all the arguments they may (${SYNC_LIMITS.deploymentArgsBytes} bytes for all its clients together, where each subscription counts at least ${SYNC_LIMITS.subscriptionBytesAtLeast}). Subscribe again later, once others have left.`,
        { retryAfterSeconds: 10 },
      );
    this.bytes.set(id, bytes);
    this.total += bytes;
    this.address.move(bytes);
    this.deployment.move(bytes);
  }

  /** Gives subscription `id`'s room back. */
  release(id: string): void {
    const bytes = this.bytes.get(id) ?? 0;
    this.total -= bytes;
    this.address.move(-bytes);
    this.deployment.move(-bytes);
    this.bytes.delete(id);
  }

  /** Gives every subscription's room back (the connection closed). */
  releaseAll(): void {
    for (const id of [...this.bytes.keys()]) this.release(id);
  }
}

/** Answers a WebSocket upgrade that is refused with `status` (and `Retry-After`, when given), and closes it. */
export function refuseUpgrade(socket: Duplex, status: string, retryAfterSeconds?: number): void {
  const retry =
    retryAfterSeconds === undefined ? "" : `Retry-After: ${retryAfterSeconds}\r\nConnection: close\r\n`;
  socket.end(`HTTP/1.1 ${status}\r\n${retry}\r\n`);
}
