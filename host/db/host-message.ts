/** A message between hosts sharing one store (commits, migrations, changed records). */
export type HostMessage =
  | { type: "commit"; deployment: string; keys?: string[]; all?: boolean }
  | { type: "schema"; deployment: string }
  | { type: "deployment"; id: string }
  /** Broadcasts may have been missed (kv.ts `RESYNC_MESSAGE`): anything may have changed. */
  | { type: "resync" };

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
