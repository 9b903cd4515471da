import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { LIMITS, SYNC_CLOSE, SYNC_PROTOCOL } from "../../sdk/protocol/index.js";
import { type AuthService, type HeldIdentity, IDENTITY_ENDED } from "../auth/index.js";
import type { DeploymentService } from "../deployments/index.js";
import type { LiveQueries } from "../live/index.js";
import type { BodyArrivals } from "./body-arrivals.js";
import { clientAddressKey, SocketsPerClient } from "./client-address.js";
import { syncToken } from "./credentials.js";
import { HeldAnswers } from "./held-answers.js";
import { lookupKey } from "./lookup-charge.js";
import { crossSiteInDev } from "./loopback-host.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";
import { KeptArgs, SubscriptionRooms } from "./subscription-args.js";
import { closeFirmly, countArrivingBytes, InboundBudgets } from "./sync-guards.js";
import { SyncHeartbeat } from "./sync-heartbeat.js";
import { refuseUpgrade, SYNC_LIMITS } from "./sync-messages.js";
import { SendLimits } from "./sync-send-limits.js";
import { type SocketWork, type SyncCaller, type SyncShared, serveSyncSocket } from "./sync-socket.js";
import { twoHostsIn } from "./tenant.js";

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

/**
 * `GET /api/sync` (WebSocket, `ws`): subscriptions and mutations over one socket. Messages are
 * JSON: `subscribe {id, name, args}` answered by `value {id, value}` or `error {id, error}` now
 * and whenever the outcome changes, `unsubscribe {id}`, and `mutation {id, name, args}` answered
 * by `mutationResult` only after the re-runs it caused were pushed (read-your-writes). The token
 * comes among the subprotocols (credentials.ts `syncToken`), or as `?platform_token=`. A client
 * that stops reading is dropped (sync-guards.ts), one that stops answering pings too
 * (sync-heartbeat.ts), and a client address that sends more than its share of bytes has its
 * sockets closed.
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
  /** The host's request bodies arriving: unfinished messages count there too (countArrivingBytes). */
  arrivals: BodyArrivals,
  /** `platform dev`: sockets opened by pages of other sites are refused (see `crossSiteInDev`). */
  dev = false,
): SyncEndpoint {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: SYNC_LIMITS.messageBytes,
    // Never one the client offered with its token in it (ws selects the first offered by default,
    // as hosts before this one did: a client seeing another than SYNC_PROTOCOL puts its token in
    // the URL instead).
    handleProtocols: (offered) =>
      offered.has(SYNC_PROTOCOL) ? SYNC_PROTOCOL : offered.has("platform") ? "platform" : false,
  });
  const open = new Map<string, Set<WebSocket>>();
  /** Per socket, its mutations under way and what it sends (a drain waits for their answers). */
  const running = new Map<WebSocket, SocketWork>();
  const perClient = new SocketsPerClient(
    quota.enabled ? LIMITS.syncSocketsPerClient : Number.POSITIVE_INFINITY,
  );
  const inbound = new InboundBudgets(quota.enabled);
  const argsPerAddress = new KeptArgs();
  const rooms = new SubscriptionRooms();
  const heartbeat = new SyncHeartbeat();
  const sends = new SendLimits();
  let draining = false;
  const closeGone = (ws: WebSocket) => closeFirmly(ws, SYNC_CLOSE.deploymentGone, "deployment deleted");
  const stopWatching = deployments.onGone((id) => {
    for (const ws of open.get(id) ?? []) closeGone(ws);
  });
  const shared: SyncShared = {
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
    answersHeld: new HeldAnswers(),
    draining: () => draining,
    closeGone,
  };
  const serve = (ws: WebSocket, caller: SyncCaller) => serveSyncSocket(ws, caller, shared);
  const onUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node hands any request-target on: one `URL` cannot parse (`//[`) is the client's mistake.
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://localhost");
    } catch {
      return refuseUpgrade(socket, "400 Bad Request");
    }
    if (twoHostsIn(req)) return refuseUpgrade(socket, "400 Bad Request");
    const deployment = resolveDeployment(req.headers.host ?? "");
    if (draining) return refuseUpgrade(socket, "503 Service Unavailable", 0);
    if (dev && crossSiteInDev(req.headers.origin)) return refuseUpgrade(socket, "403 Forbidden");
    // Counted before anything is awaited, so concurrent upgrades cannot all pass the check.
    const client = quota.clientAddress(req);
    if (!perClient.admit(client, socket))
      return refuseUpgrade(socket, "429 Too Many Requests", LIMITS.busyRetryAfterSeconds);
    // An upgrade costs its address a request, as a call would, before the deployment is looked up
    // and its token checked: those take the host's main thread (2,000 upgrades took 4.4 s of it).
    // In a bucket of their own, one for all deployments: a client's upgrades and calls do not eat
    // into each other, and naming many deployments does not multiply it.
    const addressKey = `upgrade\u0000${clientAddressKey(client)}`;
    if (!quota.tryTake(addressKey))
      return refuseUpgrade(socket, "429 Too Many Requests", quota.retryAfterSeconds(addressKey));
    // A deployment this host does not hold costs a read of the database: charged as other
    // requests' lookups are (lookup-charge.ts).
    if (deployment && !deployments.holds(deployment) && !quota.tryTake(lookupKey(client)))
      return refuseUpgrade(socket, "429 Too Many Requests", quota.retryAfterSeconds(lookupKey(client)));
    const record = url.pathname === "/api/sync" && deployment ? await deployments.get(deployment) : undefined;
    if (!deployment || !record) return refuseUpgrade(socket, "404 Not Found");
    // The incarnation the token was checked against: one created again meanwhile is another.
    const incarnation = record.incarnation ?? null;
    let held: HeldIdentity | null = null;
    let endedBeforeOpen: string | undefined;
    let end = (reason: string) => {
      endedBeforeOpen = reason;
    };
    let token: string | null;
    try {
      token = syncToken(url, req.headers["sec-websocket-protocol"]);
    } catch {
      return refuseUpgrade(socket, "400 Bad Request");
    }
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
      countArrivingBytes(
        ws,
        socket,
        arrivals.begin(req, () => ws.terminate()),
      );
      if (!held)
        return serve(ws, { deployment, incarnation, identity: null, session: null, key, gate: null, client });
      const gate = held.gate;
      const expiry = setTimeout(() => end(IDENTITY_ENDED.expired), Math.max(0, held.expiresAt - Date.now()));
      end = (reason) => closeFirmly(ws, SYNC_CLOSE.identityEnded, reason);
      ws.once("close", () => clearTimeout(expiry));
      if (endedBeforeOpen !== undefined) end(endedBeforeOpen);
      serve(ws, { deployment, incarnation, identity, session, key, gate, client });
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
