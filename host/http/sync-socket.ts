import type { WebSocket } from "ws";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { SessionGate, SessionProof } from "../auth/index.js";
import { type CallResult, type DeploymentService, parseIdempotencyKey } from "../deployments/index.js";
import type { LiveQueries, Subscriber } from "../live/index.js";
import { clientAddressKey } from "./client-address.js";
import type { HeldAnswers } from "./held-answers.js";
import type { RequestQuota } from "./request-quota.js";
import { type KeptArgs, roomFull, SubscriptionArgs, type SubscriptionRooms } from "./subscription-args.js";
import { dropSlowConsumer, type InboundBudgets, type Outgoing, onBudgetedMessage } from "./sync-guards.js";
import type { SyncHeartbeat } from "./sync-heartbeat.js";
import {
  type ClientMessage,
  nameMissing,
  overlong,
  readClientMessage,
  SYNC_LIMITS,
  socketError,
  unknownMessageType,
} from "./sync-messages.js";
import { SocketPushes } from "./sync-pushes.js";
import type { SendLimits } from "./sync-send-limits.js";

/** A socket's work a drain waits for: its mutations under way and the answers it still sends. */
export interface SocketWork {
  mutations: Set<Promise<void>>;
  pushes: SocketPushes;
}

/** What every socket of one host's sync endpoint shares (built once by `attachSync`). */
export interface SyncShared {
  deployments: DeploymentService;
  live: LiveQueries;
  quota: RequestQuota;
  heartbeat: SyncHeartbeat;
  sends: SendLimits;
  inbound: InboundBudgets;
  argsPerAddress: KeptArgs;
  /** Each deployment's room for all its connections' subscriptions' arguments, shared fairly. */
  rooms: SubscriptionRooms;
  /** The open sockets per deployment, closed when it is deleted. */
  open: Map<string, Set<WebSocket>>;
  running: Map<WebSocket, SocketWork>;
  /** Mutation answers waiting for their pushes, bounded per client address and in all. */
  answersHeld: HeldAnswers;
  draining: () => boolean;
  closeGone: (ws: WebSocket) => void;
}

/** Who is on one socket, as its upgrade settled it. */
export interface SyncCaller {
  deployment: string;
  /** The deployment's incarnation when the upgrade checked the token (null: none recorded). */
  incarnation: string | null;
  identity: BridgeIdentity | null;
  session: SessionProof | null;
  /** The request-quota key the socket's calls and pushes are charged to. */
  key: string;
  /** Set for a held identity: no write runs while it ends (see OpenSessions). */
  gate: SessionGate | null;
  client: string;
}

const identityEnded = () =>
  new PlatformError("unauthorized", "This connection's identity ended; reconnect with a live token.");

/**
 * Serves one accepted sync socket: its subscriptions, unsubscribes and mutations, with their
 * replies and pushes in order, until it closes. Everything a socket holds (argument bytes, inbound
 * budget, subscriptions, its place in `open` and `running`) is given back on close.
 */
export function serveSyncSocket(ws: WebSocket, caller: SyncCaller, shared: SyncShared): void {
  const {
    deployments,
    live,
    quota,
    heartbeat,
    sends,
    inbound,
    argsPerAddress,
    rooms,
    open,
    running,
    closeGone,
    answersHeld,
  } = shared;
  const { deployment, incarnation, identity, session, key, gate, client } = caller;
  const sockets = open.get(deployment) ?? new Set<WebSocket>();
  open.set(deployment, sockets);
  sockets.add(ws);
  heartbeat.watch(ws);
  // A frame the protocol refuses (not UTF-8, over the size limit, a reserved bit): `ws` closes
  // the socket with the matching code, then emits the error, which unheard would end the host.
  ws.on("error", () => {});
  const mutations = new Set<Promise<void>>();
  // Deleted (or deleted and created again) between the upgrade's check and now: the listener
  // that closes a deleted deployment's sockets has run already.
  void deployments.get(deployment).then(
    (record) => (record && (record.incarnation ?? null) === incarnation) || closeGone(ws),
    // Not known now (the database busy or away): the client connects again, after its back-off.
    () => ws.close(1011, "try again"),
  );
  const subscriptions = new Map<string, Subscriber>();
  const sendMessage = (message: Outgoing) => {
    if (ws.readyState === ws.OPEN) sends.send(ws, message);
  };
  // Values are JSON already: they are spliced in, never parsed and encoded again per subscriber.
  const valueText = (type: "value" | "mutationResult", id: string, valueJson: string) =>
    `{"type":"${type}","id":${JSON.stringify(id)},"value":${valueJson}}`;
  // Every pushed result costs the subscriber one request, shared execution or not (sync-pushes.ts).
  const pushes = new SocketPushes(
    quota,
    key,
    sendMessage,
    (length) => sends.fits(ws, length),
    () => ws.readyState === ws.OPEN,
    () => dropSlowConsumer(ws),
  );
  // Replies go in order behind the results held back, within what the socket may leave unsent.
  const send = (message: unknown) => pushes.reply(JSON.stringify(message));
  running.set(ws, { mutations, pushes });
  const mutate = async (id: string, message: ClientMessage & { type: "mutation" }, argsJson: string) => {
    try {
      const idempotencyKey = parseIdempotencyKey(message.idempotencyKey ?? undefined);
      quota.charge(key);
      // No write as an ended identity: wait out a retirement in progress, then count this
      // write so the next one waits for it (see OpenSessions).
      if (gate) {
        while (gate.settling) await gate.settling;
        if (gate.ended || ws.readyState !== ws.OPEN) throw identityEnded();
        gate.writing++;
      }
      let result: CallResult;
      try {
        result = await deployments.call(deployment, {
          kind: "mutation",
          name: message.name,
          argsJson,
          identity,
          session,
          idempotencyKey,
          anonymousCaller: address,
          incarnation,
        });
      } finally {
        gate?.endWrite();
      }
      const chars = result.valueJson.length;
      // Its size too, in characters (the socket encodes it; a shared query's push is encoded
      // once), charged before it waits: held answers are the host's memory.
      quota.chargeAnswer(key, chars);
      const held = answersHeld.hold(address, deployment, chars);
      if (held) {
        try {
          await live.settledFor(deployment, ws);
        } finally {
          held();
        }
      }
      // Read-your-writes holds over quota too: results held back go out before the answer.
      pushes.reply(valueText("mutationResult", id, result.valueJson), true);
    } catch (error) {
      send({ type: "mutationResult", id, error: socketError(error) });
    }
  };
  // Its address's shares (arguments kept, messages read, live state held, data left unsent), keyed
  // as every per-address limit is: an IPv6 client rotating through its /64 is one client.
  const address = clientAddressKey(client);
  sends.belongs(ws, { address, deployment });
  const keptArgs = new SubscriptionArgs(argsPerAddress.of(address), rooms.place(deployment, address));
  // Its room taken for another client's (this address holds more than an even share): it ends as
  // an unsubscribe would, and the client is told when to subscribe again.
  const endForOthers = (id: string) => {
    const subscriber = subscriptions.get(id);
    subscriptions.delete(id);
    pushes.forget(id);
    if (subscriber) live.leave(subscriber);
    send({
      type: "error",
      id,
      error: socketError(roomFull(`Subscription ${id} was ended for another client's`)),
    });
  };
  const receive = async (data: unknown) => {
    // Draining: whatever comes now is sent again to the host the client reconnects to. Closing
    // (its identity ended, its deployment deleted): nothing it still sent runs.
    if (shared.draining() || ws.readyState !== ws.OPEN) return;
    let message: ClientMessage;
    try {
      message = readClientMessage(data);
    } catch (error) {
      send({ type: "error", error: socketError(error) });
      return;
    }
    const tooLong = overlong(message);
    if (tooLong) return send(tooLong);
    const id = typeof message.id === "string" ? message.id : "";
    const refusal = nameMissing(message, id);
    if (refusal) return send(refusal);
    const argsJson = () =>
      JSON.stringify("args" in message && message.args !== undefined ? message.args : {});
    if (message.type === "subscribe") {
      const args = argsJson();
      if (subscriptions.has(id) || subscriptions.size >= SYNC_LIMITS.subscriptions) {
        send({
          type: "error",
          id,
          error: {
            code: "bad_request",
            message: `Subscription ${id} exists, or the ${SYNC_LIMITS.subscriptions}-subscription limit is reached.`,
          },
        });
        return;
      }
      // A subscription runs its query at once: it costs a request, as a call would. Refused too:
      // a full deployment's room looks at every address holding some of it to make room.
      try {
        quota.charge(key);
        keptArgs.keep(id, message.name, args, () => endForOthers(id));
      } catch (error) {
        send({ type: "error", id, error: socketError(error) });
        return;
      }
      // Its pushes are its own while the id is: an id unsubscribed and used again is another's.
      const current = () => subscriptions.get(id) === subscriber;
      const before = valueText("value", id, "").slice(0, -1);
      const subscriber: Subscriber = {
        caller: address,
        owner: ws,
        value: (_valueJson, encoded) =>
          pushes.push(id, {
            message: () => ({ before, shared: encoded(), after: "}" }),
            // Its bytes, as sending counts them: text beyond ASCII takes more than its characters.
            length: before.length + encoded().length + 1,
            current,
          }),
        error: (error) => {
          const text = JSON.stringify({ type: "error", id, error });
          pushes.push(id, { message: () => text, length: text.length, current });
        },
      };
      subscriptions.set(id, subscriber);
      // Left through live.leave, at once, even before this resolves; a failure must not go unheard.
      live.subscribe(deployment, message.name, args, identity, subscriber, incarnation).catch(() => {});
    } else if (message.type === "unsubscribe") {
      const subscriber = subscriptions.get(id);
      subscriptions.delete(id);
      pushes.forget(id);
      if (subscriber) live.leave(subscriber);
      keptArgs.release(id);
    } else if (message.type === "mutation") {
      const done = mutate(id, message, argsJson());
      mutations.add(done);
      await done;
      mutations.delete(done);
    } else {
      send({ type: "error", id, error: { code: "bad_request", message: unknownMessageType(message) } });
    }
  };
  // A message must never reject unheard: an unhandled rejection ends the host process.
  onBudgetedMessage(ws, inbound.open(address), (data) => {
    receive(data).catch(() => {
      send({ type: "error", error: { code: "internal", message: "The message could not be handled." } });
    });
  });
  ws.on("close", () => {
    inbound.close(address);
    keptArgs.releaseAll();
    sockets.delete(ws);
    running.delete(ws);
    if (sockets.size === 0 && open.get(deployment) === sockets) open.delete(deployment);
    pushes.close();
    for (const subscriber of subscriptions.values()) live.leave(subscriber);
    subscriptions.clear();
  });
}
