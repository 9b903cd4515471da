/**
 * WebSocket close codes of `GET /api/sync` that tell the client what to do next. Codes 4000-4999
 * are the application's own (RFC 6455).
 */
export const SYNC_CLOSE = {
  /**
   * The identity the socket was opened with ended (the guest was upgraded to an account, the
   * session was retired, or its token expired): get a live token, reconnect and subscribe again.
   */
  identityEnded: 4001,
  /**
   * The deployment was deleted. A new deployment under the same id is another app: it refuses the
   * old tokens, so a client that reconnects starts over with a new identity.
   */
  deploymentGone: 4004,
  /**
   * WebSocket's standard "Service Restart": the host is shutting down (rolling restart) after
   * answering every mutation it took from this socket. Reconnect at once, without back-off (a load
   * balancer sends the new socket to another host), subscribe again and resend the mutations that
   * got no answer, with their idempotency keys.
   */
  hostRestarting: 1012,
} as const;
