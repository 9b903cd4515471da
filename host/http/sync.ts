import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { type BridgeIdentity, LIMITS, SYNC_CLOSE } from "../../sdk/protocol/index.js";
import { callerError, PlatformError } from "../../sdk/values/index.js";
import {
  type AuthService,
  type HeldIdentity,
  IDENTITY_ENDED,
  type SessionGate,
  type SessionProof,
} from "../auth/index.js";
import { type CallResult, type DeploymentService, parseIdempotencyKey } from "../deployments/index.js";
import type { LiveQueries } from "../live/index.js";
import { SocketsPerClient } from "./client-address.js";
import { syncToken } from "./credentials.js";
import { crossSiteInDev } from "./loopback-host.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";
import { dropSlowConsumer, InboundBudgets, onBudgetedMessage, SendLimits } from "./sync-guards.js";
import { SyncHeartbeat } from "./sync-heartbeat.js";
import {
  ArgsPerAddress,
  type ClientMessage,
  nameMissing,
  readClientMessage,
  refuseUpgrade,
  SubscriptionArgs,
  SYNC_LIMITS,
  unknownMessageType,
} from "./sync-messages.js";
import { SocketPushes } from "./sync-pushes.js";

export { SYNC_LIMITS } from "./sync-messages.js";

/** The sync endpoint of a host: {@link SyncEndpoint.drain} for a graceful shutdown, then `stop`. */
export interface SyncEndpoint {
  /**
   * Takes no new sockets, subscriptions or mutations; answers every mutation already taken, then
   * closes each socket with {@link SYNC_CLOSE.hostRestarting}. Mutations sent after it began get
   * no answer: the client sends them again, with their idempotency keys, to the host it reaches next.
   */
  drain(): Promise<void>;
  /** Closes every socket at once and stops serving upgrades. */
  stop(): void;
}

const identityEnded = () =>
  new PlatformError("unauthorized", "This connection's identity ended; reconnect with a live token.");

/**
 * `GET /api/sync` (WebSocket, `ws`): subscriptions and mutations over one socket. Messages are
 * JSON: `subscribe {id, name, args}` answered by `value {id, value}` or `error {id, error}` now
 * and whenever the outcome changes, `unsubscribe {id}`, and `mutation {id, name, args}` answered
 * by `mutationResult` only after the re-runs it caused were pushed (read-your-writes). The token
 * comes as `?platform_token=`. A client that stops reading is dropped (sync-guards.ts), one that
 * stops answering pings too (sync-heartbeat.ts), and a client address that sends more than its
 * share of bytes has its sockets closed.
 * Subscriptions, mutations and every pushed result count toward the caller's request quota. When the identity
 * ends (the guest was upgraded or retired, here or on another host, or the token expired) the
 * socket is closed with {@link SYNC_CLOSE.identityEnded}; no mutation runs as an ended identity.
 * When the deployment is deleted (here or on another host) its sockets are closed with
 * {@link SYNC_CLOSE.deploymentGone}. A client address may hold {@link LIMITS.syncSocketsPerClient}
 * sockets open on the host; beyond them an upgrade is answered `429` with `Retry-After`. A mutation may carry `idempotencyKey` (as the HTTP route's
 * `Idempotency-Key`).
 */
export function attachSync(
  server: Server,
  resolveDeployment: (host: string) => string | undefined,
  deployments: DeploymentService,
  auth: AuthService,
  live: LiveQueries,
  quota: RequestQuota,
  /** `platform dev`: sockets opened by pages of other sites are refused (see `crossSiteInDev`). */
  dev = false,
): SyncEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: SYNC_LIMITS.messageBytes });
  const open = new Map<string, Set<WebSocket>>();
  /** Per socket, its mutations under way and what it sends (a drain waits for their answers). */
  const running = new Map<WebSocket, { mutations: Set<Promise<void>>; pushes: SocketPushes }>();
  const perClient = new SocketsPerClient(
    quota.enabled ? LIMITS.syncSocketsPerClient : Number.POSITIVE_INFINITY,
  );
  const inbound = new InboundBudgets(quota.enabled);
  const argsPerAddress = new ArgsPerAddress();
  const heartbeat = new SyncHeartbeat();
  const sends = new SendLimits();
  let draining = false;
  const closeGone = (ws: WebSocket) => ws.close(SYNC_CLOSE.deploymentGone, "deployment deleted");
  const stopWatching = deployments.onGone((id) => {
    for (const ws of open.get(id) ?? []) closeGone(ws);
  });
  const onUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node hands any request-target on: one `URL` cannot parse (`//[`) is the client's mistake.
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://localhost");
    } catch {
      return refuseUpgrade(socket, "400 Bad Request");
    }
    const deployment = resolveDeployment(req.headers.host ?? "");
    if (draining) return refuseUpgrade(socket, "503 Service Unavailable", 0);
    if (dev && crossSiteInDev(req.headers.origin)) return refuseUpgrade(socket, "403 Forbidden");
    // Counted before anything is awaited, so concurrent upgrades cannot all pass the check.
    const client = quota.clientAddress(req);
    if (!perClient.admit(client, socket))
      return refuseUpgrade(socket, "429 Too Many Requests", LIMITS.busyRetryAfterSeconds);
    if (url.pathname !== "/api/sync" || !deployment || !(await deployments.get(deployment)))
      return refuseUpgrade(socket, "404 Not Found");
    let held: HeldIdentity | null = null;
    let endedBeforeOpen: string | undefined;
    let end = (reason: string) => {
      endedBeforeOpen = reason;
    };
    const token = syncToken(url);
    try {
      if (token) held = await auth.holdIdentity(deployment, token, (reason) => end(reason));
    } catch {
      return refuseUpgrade(socket, "401 Unauthorized");
    }
    if (held) socket.once("close", held.release);
    const identity = held ? held.identity : null;
    const session = held ? held.session : null;
    const key = quotaKey(deployment, identity, client);
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (!held) return serve(ws, deployment, null, null, key, null, client);
      const gate = held.gate;
      const expiry = setTimeout(() => end(IDENTITY_ENDED.expired), Math.max(0, held.expiresAt - Date.now()));
      end = (reason) => ws.close(SYNC_CLOSE.identityEnded, reason);
      ws.once("close", () => clearTimeout(expiry));
      if (endedBeforeOpen !== undefined) end(endedBeforeOpen);
      serve(ws, deployment, identity, session, key, gate, client);
    });
  };
  const serve = (
    ws: WebSocket,
    deployment: string,
    identity: BridgeIdentity | null,
    session: SessionProof | null,
    key: string,
    gate: SessionGate | null,
    client: string,
  ) => {
    const sockets = open.get(deployment) ?? new Set<WebSocket>();
    open.set(deployment, sockets);
    sockets.add(ws);
    heartbeat.watch(ws);
    // A frame the protocol refuses (not UTF-8, over the size limit, a reserved bit): `ws` closes
    // the socket with the matching code, then emits the error, which unheard would end the host.
    ws.on("error", () => {});
    const mutations = new Set<Promise<void>>();
    // Deleted between the upgrade's check and now: the listener above has run already.
    void deployments.get(deployment).then((record) => record || closeGone(ws));
    const subscriptions = new Map<string, Promise<() => void>>();
    const sendText = (text: string) => {
      if (ws.readyState === ws.OPEN) sends.send(ws, text);
    };
    // Values are JSON already: they are spliced in, never parsed and encoded again per subscriber.
    const valueText = (type: "value" | "mutationResult", id: string, valueJson: string) =>
      `{"type":"${type}","id":${JSON.stringify(id)},"value":${valueJson}}`;
    // Every pushed result costs the subscriber one request, shared execution or not (sync-pushes.ts).
    const pushes = new SocketPushes(
      quota,
      key,
      sendText,
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
          });
        } finally {
          gate?.endWrite();
        }
        await live.settledFor(deployment);
        // Read-your-writes holds over quota too: results held back go out before the answer.
        pushes.reply(valueText("mutationResult", id, result.valueJson));
      } catch (error) {
        send({ type: "mutationResult", id, error: callerError(error) });
      }
    };
    const keptArgs = new SubscriptionArgs(argsPerAddress.of(client));
    const receive = async (data: unknown) => {
      // Draining: whatever comes now is sent again to the host the client reconnects to.
      if (draining) return;
      let message: ClientMessage;
      try {
        message = readClientMessage(data);
      } catch (error) {
        send({ type: "error", error: callerError(error) });
        return;
      }
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
        try {
          keptArgs.keep(id, args);
        } catch (error) {
          send({ type: "error", id, error: callerError(error) });
          return;
        }
        // A subscription runs its query at once: it costs a request, as a call would.
        try {
          quota.charge(key);
        } catch (error) {
          keptArgs.release(id);
          send({ type: "error", id, error: callerError(error) });
          return;
        }
        // Its pushes are its own while the id is: an id unsubscribed and used again is another's.
        const current = () => subscriptions.get(id) === subscribed;
        const frame = valueText("value", id, "").length;
        const subscribed = live.subscribe(deployment, message.name, args, identity, {
          value: (valueJson) =>
            pushes.push(id, {
              text: () => valueText("value", id, valueJson),
              length: frame + valueJson.length,
              current,
            }),
          error: (error) => {
            const text = JSON.stringify({ type: "error", id, error });
            pushes.push(id, { text: () => text, length: text.length, current });
          },
        });
        // Awaited on unsubscribe or close; a failure until then must not go unheard.
        subscribed.catch(() => {});
        subscriptions.set(id, subscribed);
      } else if (message.type === "unsubscribe") {
        const stop = subscriptions.get(id);
        subscriptions.delete(id);
        pushes.forget(id);
        keptArgs.release(id);
        (await stop)?.();
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
    onBudgetedMessage(ws, inbound.open(client), (data) => {
      receive(data).catch(() => {
        send({ type: "error", error: { code: "internal", message: "The message could not be handled." } });
      });
    });
    ws.on("close", async () => {
      inbound.close(client);
      keptArgs.releaseAll();
      sockets.delete(ws);
      running.delete(ws);
      if (sockets.size === 0 && open.get(deployment) === sockets) open.delete(deployment);
      pushes.close();
      const stops = [...subscriptions.values()];
      subscriptions.clear();
      for (const stop of stops)
        await Promise.resolve(stop).then(
          (unsubscribe) => unsubscribe(),
          () => {},
        );
    });
  };
  // An upgrade must never reject unheard: an unhandled rejection ends the host process.
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch(() => socket.destroy());
  };
  server.on("upgrade", upgrade);
  return {
    drain: async () => {
      draining = true;
      await Promise.all(
        [...running].map(async ([ws, { mutations, pushes }]) => {
          while (mutations.size > 0) await Promise.allSettled([...mutations]);
          // Their answers may wait for the socket's data to drain: a while, not for ever.
          const until = performance.now() + LIMITS.drainGraceMs;
          while (pushes.replying && ws.readyState === ws.OPEN && performance.now() < until)
            await new Promise((resolve) => setTimeout(resolve, 20));
          ws.close(SYNC_CLOSE.hostRestarting, "host restarting");
        }),
      );
    },
    stop: () => {
      stopWatching();
      heartbeat.stop();
      server.off("upgrade", upgrade);
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}
