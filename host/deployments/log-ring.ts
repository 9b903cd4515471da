import { CALL_USAGE_FIGURES, type CallUsage } from "../../sdk/protocol/index.js";
import { type CallLine, type CallRecord, callLogLine, type LogLine } from "./log-line.js";

/** The usage figures of a call, in the order the ring stores them. */
const USAGE_FIELDS = CALL_USAGE_FIGURES;
const KINDS: readonly CallRecord["kind"][] = ["query", "mutation", "endpoint", "guestUpgrade"];
/** Distinct strings kept per ring before its table is cleared (a deployment has few handler names). */
const MAX_INTERNED = 1024;
const FIRST_CAPACITY = 16;

/** The ring's slots: a line object, or a call's line as one entry in each column. */
interface Slots {
  /** The line of each slot; `undefined` where the slot holds a call in the columns. */
  lines: Array<LogLine | undefined>;
  /** The characters of tenants' text each line holds (see {@link textChars}); 0 for a call's line. */
  chars: Float64Array;
  timeMs: Float64Array;
  requestStartedMs: Float64Array;
  requestSeq: Float64Array;
  /** {@link USAGE_FIELDS} of each slot, one after another. */
  usage: Float64Array;
  kinds: Uint8Array;
  handlers: string[];
  names: string[];
  outcomes: string[];
}

function emptySlots(capacity: number): Slots {
  return {
    lines: new Array<LogLine | undefined>(capacity),
    chars: new Float64Array(capacity),
    timeMs: new Float64Array(capacity),
    requestStartedMs: new Float64Array(capacity),
    requestSeq: new Float64Array(capacity),
    usage: new Float64Array(capacity * USAGE_FIELDS.length),
    kinds: new Uint8Array(capacity),
    handlers: new Array<string>(capacity),
    names: new Array<string>(capacity),
    outcomes: new Array<string>(capacity),
  };
}

/** Copies slot `from` of `source` into slot `to` of `target`. */
function copySlot(source: Slots, from: number, target: Slots, to: number): void {
  const width = USAGE_FIELDS.length;
  target.lines[to] = source.lines[from];
  target.chars[to] = source.chars[from] as number;
  target.timeMs[to] = source.timeMs[from] as number;
  target.requestStartedMs[to] = source.requestStartedMs[from] as number;
  target.requestSeq[to] = source.requestSeq[from] as number;
  target.usage.set(source.usage.subarray(from * width, (from + 1) * width), to * width);
  target.kinds[to] = source.kinds[from] as number;
  target.handlers[to] = source.handlers[from] as string;
  target.names[to] = source.names[from] as string;
  target.outcomes[to] = source.outcomes[from] as string;
}

/**
 * The characters of text a line keeps alive: its message, fields and failure. `fieldsChars`: its
 * fields' JSON length when the writer measured it already.
 */
function textChars(line: LogLine, fieldsChars?: number): number {
  let chars = line.message.length;
  if (line.fields) chars += fieldsChars ?? JSON.stringify(line.fields).length;
  const error = line.call?.error;
  if (error) chars += error.message.length + (error.stack?.length ?? 0);
  return chars;
}

/**
 * The last `capacity` log lines of one deployment, oldest first, and fewer while their text is
 * over `maxChars` characters: lines are cut to limits one by one, but a thousand of them would still
 * be megabytes per deployment of the host's memory. Nearly every line is a call's
 * budget line, one per request. Kept as objects, each would outlive several young-generation
 * collections and be copied by each (under bench/isolates' load, keeping no lines at all saved
 * about 7% of the host's CPU per request; this layout saved about 3.5%). So a call's line is kept
 * as numbers in typed columns with its strings interned, and only turned back into a
 * {@link LogLine} when read. A handler's own lines are kept as they are. The columns start small
 * and double up to `capacity`.
 */
export class LogRing {
  private slots = emptySlots(0);
  private readonly interned = new Map<string, string>();
  /** Slot of the oldest line. */
  private head = 0;
  private size = 0;
  /** The text characters the kept lines hold. */
  private chars = 0;

  /** `deployment`: the id every line of this ring carries. */
  constructor(
    private readonly deployment: string,
    private readonly capacity: number,
    private readonly maxChars = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Keeps a line as it is, dropping the oldest lines while the text kept is over its maximum
   * (`fieldsChars`: see {@link textChars}).
   */
  push(line: LogLine, fieldsChars?: number): void {
    const chars = textChars(line, fieldsChars);
    const slot = this.nextSlot(); // first: it may re-lay the slots
    this.slots.lines[slot] = line;
    this.slots.chars[slot] = chars;
    this.chars += chars;
    while (this.chars > this.maxChars && this.size > 1) this.dropOldest();
  }

  /** Lines kept now. */
  get length(): number {
    return this.size;
  }

  private dropOldest(): void {
    this.forget(this.head);
    this.head = (this.head + 1) % this.slots.lines.length;
    this.size--;
  }

  /** Lets go of slot `slot`'s line and its text. */
  private forget(slot: number): void {
    this.chars -= this.slots.chars[slot] as number;
    this.slots.chars[slot] = 0;
    this.slots.lines[slot] = undefined;
  }

  /** Keeps a call's budget line in the columns. */
  pushCall(line: CallLine): void {
    const slot = this.nextSlot(); // first: it may re-lay the slots
    const slots = this.slots;
    slots.lines[slot] = undefined;
    slots.timeMs[slot] = line.timeMs;
    slots.requestStartedMs[slot] = line.requestStartedMs;
    slots.requestSeq[slot] = line.requestSeq;
    slots.kinds[slot] = KINDS.indexOf(line.call.kind);
    slots.handlers[slot] = this.intern(line.handler);
    slots.names[slot] = this.intern(line.call.name);
    slots.outcomes[slot] = this.intern(line.call.outcome);
    const at = slot * USAGE_FIELDS.length;
    for (let i = 0; i < USAGE_FIELDS.length; i++)
      slots.usage[at + i] = line.call.usage[USAGE_FIELDS[i] as keyof CallUsage];
  }

  /** The kept lines, oldest first. */
  recent(): LogLine[] {
    const out: LogLine[] = [];
    for (let i = 0; i < this.size; i++) out.push(this.read((this.head + i) % this.slots.lines.length));
    return out;
  }

  private read(slot: number): LogLine {
    const slots = this.slots;
    const line = slots.lines[slot];
    if (line) return line;
    const usage = {} as CallUsage;
    const at = slot * USAGE_FIELDS.length;
    for (let i = 0; i < USAGE_FIELDS.length; i++)
      usage[USAGE_FIELDS[i] as keyof CallUsage] = slots.usage[at + i] as number;
    return callLogLine(this.deployment, {
      timeMs: slots.timeMs[slot] as number,
      handler: slots.handlers[slot] as string,
      requestStartedMs: slots.requestStartedMs[slot] as number,
      requestSeq: slots.requestSeq[slot] as number,
      call: {
        kind: KINDS[slots.kinds[slot] as number] as CallRecord["kind"],
        name: slots.names[slot] as string,
        outcome: slots.outcomes[slot] as string,
        usage,
      },
    });
  }

  /** The slot the next line goes in: the oldest line's once the ring is full. */
  private nextSlot(): number {
    const room = this.slots.lines.length;
    if (this.size === room && room < this.capacity)
      this.grow(Math.min(this.capacity, Math.max(FIRST_CAPACITY, room * 2)));
    const length = this.slots.lines.length;
    if (this.size < length) return (this.head + this.size++) % length;
    const slot = this.head;
    this.forget(slot);
    this.head = (this.head + 1) % length;
    return slot;
  }

  /** Re-lays the ring in `capacity` slots, oldest line first in slot 0. */
  private grow(capacity: number): void {
    const slots = emptySlots(capacity);
    for (let i = 0; i < this.size; i++)
      copySlot(this.slots, (this.head + i) % this.slots.lines.length, slots, i);
    this.slots = slots;
    this.head = 0;
  }

  private intern(text: string): string {
    const known = this.interned.get(text);
    if (known !== undefined) return known;
    if (this.interned.size >= MAX_INTERNED) this.interned.clear();
    this.interned.set(text, text);
    return text;
  }
}
