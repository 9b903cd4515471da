import type { Duplex } from "node:stream";
import { LIMITS } from "../../sdk/protocol/index.js";
import { callerError, isPlatformError, PlatformError } from "../../sdk/values/index.js";
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
   * its result to every one of them. Once it is full, an address within an even share still
   * subscribes, in place of others' (subscription-args.ts).
   */
  deploymentArgsBytes: 64 * 1024 * 1024,
  /** When a subscription refused or ended for want of the deployment's room may try again (s). */
  fullRetryAfterSeconds: 10,
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

/**
 * What a client is told of `error` over the socket: {@link callerError}, and when to try again when
 * the error says (the socket has no `Retry-After` header; platform/client waits that long).
 */
export function socketError(error: unknown): { code: string; message: string; retryAfterSeconds?: number } {
  const told = callerError(error);
  return isPlatformError(error) && error.expose && error.retryAfterSeconds !== undefined
    ? { code: told.code, message: told.message, retryAfterSeconds: error.retryAfterSeconds }
    : told;
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

/** Answers a WebSocket upgrade that is refused with `status` (and `Retry-After`, when given), and closes it. */
export function refuseUpgrade(socket: Duplex, status: string, retryAfterSeconds?: number): void {
  const retry =
    retryAfterSeconds === undefined ? "" : `Retry-After: ${retryAfterSeconds}\r\nConnection: close\r\n`;
  socket.end(`HTTP/1.1 ${status}\r\n${retry}\r\n`);
}
