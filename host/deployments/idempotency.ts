import { createHash } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import {
  idempotencyPrefix,
  idempotencyRecordKey,
  idempotencyWindowPrefix,
  type KvStore,
  type Transaction,
} from "../db/index.js";

/** Printable ASCII without spaces: what fits an HTTP header and a log line unescaped. */
const KEY_SHAPE = /^[\x21-\x7e]+$/;

/**
 * A caller's idempotency key (the `Idempotency-Key` header, or `idempotencyKey` of a socket
 * mutation) checked: `undefined` when none was sent, else the key, else a `bad_request` saying
 * what a key must look like.
 */
export function parseIdempotencyKey(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value === "string" &&
    value.length > 0 &&
    value.length <= LIMITS.idempotencyKeyChars &&
    KEY_SHAPE.test(value)
  )
    return value;
  throw new PlatformError(
    "bad_request",
    `An idempotency key must be 1 to ${LIMITS.idempotencyKeyChars} printable ASCII characters without spaces (a random UUID is a good one); send a new random key with each new mutation, and the same key only to retry it.`,
  );
}

/** The time window (of {@link LIMITS.idempotencyKeyMs}) a record written at `now` is filed under. */
function windowOf(now: number): number {
  return Math.floor(now / LIMITS.idempotencyKeyMs);
}

/**
 * One mutation sent with an idempotency key, inside its transaction. The outcome is recorded in
 * the SAME transaction as the handler's writes, so a record exists exactly when they committed;
 * a repeat reads the record in its own transaction and answers the stored value without running
 * the handler. Writes on a deployment are serialized (across hosts too), so a repeat that runs
 * while the first is still running sees its record once it committed, or commits first and makes
 * the first one the repeat: the handler's writes land once either way. Records are scoped to the
 * deployment and the caller (another caller reusing a key runs its own call), bound to the
 * mutation's name and arguments (reusing a key for another call is a `409 conflict`), and found
 * for at least {@link LIMITS.idempotencyKeyMs}. A handler that fails writes nothing and records
 * nothing: a repeat runs it again.
 */
export class IdempotentMutation {
  private readonly window: number;
  /** Hash of the mutation's name and arguments: a key is bound to one call. */
  private readonly request: string;

  constructor(
    private readonly deployment: string,
    private readonly caller: string,
    private readonly key: string,
    name: string,
    argsJson: string,
    now: number,
  ) {
    this.window = windowOf(now);
    this.request = createHash("sha256").update(name).update("\u0000").update(argsJson).digest("base64url");
  }

  /** Runs `handler` in `tx` unless the key's outcome is recorded; answers the value's JSON. */
  async run(tx: Transaction, handler: () => Promise<string>): Promise<string> {
    const earlier = await this.recorded(tx);
    if (earlier !== undefined) return earlier;
    const valueJson = await handler();
    // The request's hash, then the value as it is: encoded again as JSON, a value of quotes took
    // twice its size. Held until the commit as the handler's rows are, it counts against its bytes.
    const record = `${this.request}\n${valueJson}`;
    tx.budget.wroteBytes(record.length);
    tx.writeRecord(this.recordKey(this.window), record);
    return valueJson;
  }

  /** The keys {@link run} reads first (the current and the previous window's record): its group reads them ahead. */
  recordKeys(): [Buffer, Buffer] {
    return [this.recordKey(this.window), this.recordKey(this.window - 1)];
  }

  /** The value JSON recorded for this key in the current or the previous window. */
  private async recorded(tx: Transaction): Promise<string | undefined> {
    const [now, before] = this.recordKeys();
    const [current, previous] = await Promise.all([tx.readKey(now), tx.readKey(before)]);
    const text = current ?? previous;
    if (text === null) return undefined;
    const stored = storedOutcome(text);
    if (stored.request !== this.request)
      throw new PlatformError(
        "conflict",
        "This idempotency key was already used for another mutation or other arguments; send a new random key with each new mutation.",
      );
    return stored.value;
  }

  private recordKey(window: number): Buffer {
    return idempotencyRecordKey(this.deployment, window, this.caller, this.key);
  }
}

/** What a record holds: the request hash and the handler's value as JSON text. */
interface StoredOutcome {
  request: string;
  value: string;
}

/**
 * A record's outcome: `<request hash>\n<value JSON>` (a hash is base64url, without a newline), or,
 * written by a host of an earlier version, the outcome as a JSON object.
 */
function storedOutcome(text: string): StoredOutcome {
  if (text.startsWith("{")) return JSON.parse(text) as StoredOutcome;
  const split = text.indexOf("\n");
  return { request: text.slice(0, split), value: text.slice(split + 1) };
}

/**
 * Deletes expired idempotency records: after a keyed mutation of a deployment, at most once per
 * window in this process, every window before the last three (lookups read the last two; one
 * more covers hosts whose clocks differ). A deployment's records all go when it is deleted.
 */
export class IdempotencySweeper {
  private readonly swept = new Map<string, number>();

  constructor(private readonly store: KvStore) {}

  /** Notes a keyed mutation of `deployment` at `now`, sweeping when this window has not been. */
  noteMutation(deployment: string, now: number): void {
    const window = windowOf(now);
    const last = this.swept.get(deployment);
    if (last !== undefined && last >= window) return;
    this.swept.set(deployment, window);
    void this.store
      .clear({ gte: idempotencyPrefix(deployment), lt: idempotencyWindowPrefix(deployment, window - 2) })
      .catch(() => this.swept.delete(deployment));
  }

  /** Forgets a deleted deployment. */
  forget(deployment: string): void {
    this.swept.delete(deployment);
  }
}
