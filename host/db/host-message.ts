/** A message between hosts sharing one store (commits, migrations, changed records). */
export type HostMessage =
  | { type: "commit"; deployment: string; keys?: string[]; all?: boolean }
  | { type: "schema"; deployment: string }
  | { type: "deployment"; id: string }
  /** Broadcasts may have been missed (kv.ts `RESYNC_MESSAGE`): anything may have changed. */
  | { type: "resync" };

/** `messages` as a batch sends them to the other processes (`KvStore.batch`). */
export function messageTexts(messages: readonly HostMessage[]): string[] {
  return messages.map((message) => JSON.stringify(message));
}

/** Largest write set sent to other processes key by key; larger ones say "everything". */
const BROADCAST_KEYS_BYTES = 6000;

/** The message telling the other processes on the store which keys a commit of `deployment` wrote (or "everything"). */
export function commitMessage(deployment: string, writeSet: Buffer[]): string {
  let bytes = 0;
  for (const key of writeSet) bytes += key.length * 2 + 3;
  const message: HostMessage =
    bytes <= BROADCAST_KEYS_BYTES
      ? { type: "commit", deployment, keys: writeSet.map((key) => key.toString("hex")) }
      : { type: "commit", deployment, all: true };
  return JSON.stringify(message);
}

const HEX = /^(?:[0-9a-f]{2})*$/;

/**
 * `value` (another host's broadcast, parsed) as a {@link HostMessage}, or undefined when it is not
 * one: a payload of `null`, or a known type without its fields, written by anyone who may connect
 * to the database (or another version of the host), reached every host's handlers and ended them.
 */
export function checkHostMessage(value: unknown): HostMessage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const message = value as Record<string, unknown>;
  switch (message.type) {
    case "commit":
      if (typeof message.deployment !== "string") return undefined;
      if (message.keys !== undefined && !(Array.isArray(message.keys) && message.keys.every(isHex)))
        return undefined;
      if (message.all !== undefined && typeof message.all !== "boolean") return undefined;
      return message as HostMessage;
    case "schema":
      return typeof message.deployment === "string" ? (message as HostMessage) : undefined;
    case "deployment":
      return typeof message.id === "string" ? (message as HostMessage) : undefined;
    case "resync":
      return { type: "resync" };
    default:
      return undefined;
  }
}

function isHex(key: unknown): boolean {
  return typeof key === "string" && HEX.test(key);
}
