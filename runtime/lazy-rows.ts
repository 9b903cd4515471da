/**
 * Rows as the host sent them, kept as JSON text until the handler touches them. A handler that
 * returns rows it read (`return ctx.db.items.take(100)`, a page) then costs no parse and no
 * serialization here: the host's text goes back as it came (docs/architecture.md, "Rows stay
 * text until touched").
 *
 * The array handed to the handler is a Proxy over a real array: `Array.isArray`, every array
 * method, iteration and `JSON.stringify` behave as on the parsed rows. Reading an element, or
 * anything that could observe or change the elements, parses the text once into the real array,
 * and from then on every operation is forwarded to it. Reading `length` or a method parses
 * nothing.
 *
 * V8 reads a Proxy's elements slowly (about 100-200 ns each, a trap per read), so the array
 * methods that walk every element (`map`, `filter`, iteration, `sort`...) run on the real array
 * behind it, with callbacks still given the handler's array.
 */
import { PlatformError } from "../sdk/values/index.js";

// Captured before capsule code runs, which may replace the globals.
const Reflected = {
  apply: Reflect.apply,
  get: Reflect.get,
  set: Reflect.set,
  has: Reflect.has,
  deleteProperty: Reflect.deleteProperty,
  defineProperty: Reflect.defineProperty,
  getOwnPropertyDescriptor: Reflect.getOwnPropertyDescriptor,
  ownKeys: Reflect.ownKeys,
  preventExtensions: Reflect.preventExtensions,
};
const { apply } = Reflected;
const { parse, stringify } = JSON;
const call = Function.prototype.call.bind(Function.prototype.call) as (
  fn: unknown,
  thisArg: unknown,
  ...args: unknown[]
) => unknown;
const ARRAY = Array.prototype as unknown as Record<string | symbol, (...args: unknown[]) => unknown>;

/** Methods whose callback gets (value, index, array), by name. */
const WITH_CALLBACK = [
  "every",
  "filter",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
  "flatMap",
  "forEach",
  "map",
  "some",
];
/** Methods whose callback gets (accumulator, value, index, array). */
const WITH_REDUCER = ["reduce", "reduceRight"];
/** Methods that read the elements and give back something new. */
const READERS: (string | symbol)[] = [
  "at",
  "entries",
  "includes",
  "indexOf",
  "join",
  "keys",
  "lastIndexOf",
  "slice",
  "values",
  Symbol.iterator,
];
/** Methods that rearrange the elements in place and give back the array itself. */
const IN_PLACE = ["reverse", "sort"];

type Kind = "callback" | "reducer" | "reader" | "inPlace";
/** The built-in array methods run on the real array, with what each takes and gives. */
const FAST = new Map<string | symbol, { method: (...args: unknown[]) => unknown; kind: Kind }>();
for (const [names, kind] of [
  [WITH_CALLBACK, "callback"],
  [WITH_REDUCER, "reducer"],
  [READERS, "reader"],
  [IN_PLACE, "inPlace"],
] as const)
  for (const name of names) {
    const method = ARRAY[name];
    if (typeof method === "function") FAST.set(name, { method, kind });
  }

/** What each lazy array (the proxy) is backed by. */
const backing = new WeakMap<object, LazyRows>();
const backingOf = WeakMap.prototype.get.bind(backing) as (proxy: object) => LazyRows | undefined;
const back = WeakMap.prototype.set.bind(backing) as (proxy: object, rows: LazyRows) => void;

/** The placeholders handed out during one {@link serializeValue}, by number. */
let serializing: string[] | undefined;

/** The start of a placeholder string; its number follows. */
const MARK = "\u0000platform-rows\u0000";
/** {@link MARK} as `JSON.stringify` writes it inside a string. */
const ESCAPED_MARK = stringify(MARK).slice(1, -1);

function isIndexLike(key: string): boolean {
  const first = key.charCodeAt(0);
  return first >= 48 && first <= 57;
}

class LazyRows implements ProxyHandler<unknown[]> {
  /** The rows' JSON array text; `undefined` once parsed into {@link target}. */
  text: string | undefined;

  constructor(
    text: string,
    readonly target: unknown[],
  ) {
    this.text = text;
  }

  materialize(): void {
    const text = this.text;
    if (text === undefined) return;
    this.text = undefined;
    const rows = parse(text) as unknown;
    const target = this.target;
    if (!Array.isArray(rows) || rows.length !== target.length)
      throw new PlatformError("internal", "The host sent rows that do not match their count.");
    for (let i = 0; i < rows.length; i++) target[i] = rows[i];
  }

  /** The rows' text while untouched and nothing overrides how arrays turn into JSON. */
  untouchedText(): string | undefined {
    if (this.text === undefined || Reflected.get(this.target, "toJSON") !== undefined) return undefined;
    return this.text;
  }

  get(target: unknown[], key: string | symbol, receiver: unknown): unknown {
    if (typeof key === "string") {
      if (key === "toJSON" && Reflected.get(target, key) === undefined) return lazyToJSON;
      if (isIndexLike(key)) {
        this.materialize();
        return Reflected.get(target, key, receiver);
      }
    }
    const value = Reflected.get(target, key, receiver);
    const fast = FAST.get(key);
    return fast && value === fast.method ? this.onTarget(fast.method, fast.kind, receiver) : value;
  }

  /**
   * `method` (a built-in the handler's array would run) run on the real array instead: called on
   * anything but the handler's array, or with a callback that is not a function, it runs as is.
   */
  private onTarget(method: (...args: unknown[]) => unknown, kind: Kind, proxy: unknown) {
    const rows = this;
    return function (this: unknown, ...args: unknown[]): unknown {
      const [callback, extra] = args;
      const withCallback = kind === "callback" || kind === "reducer";
      if (this !== proxy || (withCallback && typeof callback !== "function"))
        return apply(method, this, args);
      rows.materialize();
      if (kind === "callback")
        return apply(method, rows.target, [
          (value: unknown, index: number) => call(callback, extra, value, index, proxy),
        ]);
      if (kind === "reducer") {
        const reducer = (sum: unknown, value: unknown, index: number) =>
          call(callback, undefined, sum, value, index, proxy);
        return apply(method, rows.target, args.length > 1 ? [reducer, extra] : [reducer]);
      }
      const result = apply(method, rows.target, args);
      return kind === "inPlace" ? proxy : result;
    };
  }

  set(target: unknown[], key: string | symbol, value: unknown, receiver: unknown): boolean {
    this.materialize();
    return Reflected.set(target, key, value, receiver);
  }
  has(target: unknown[], key: string | symbol): boolean {
    this.materialize();
    return Reflected.has(target, key);
  }
  deleteProperty(target: unknown[], key: string | symbol): boolean {
    this.materialize();
    return Reflected.deleteProperty(target, key);
  }
  defineProperty(target: unknown[], key: string | symbol, descriptor: PropertyDescriptor): boolean {
    this.materialize();
    return Reflected.defineProperty(target, key, descriptor);
  }
  getOwnPropertyDescriptor(target: unknown[], key: string | symbol): PropertyDescriptor | undefined {
    this.materialize();
    return Reflected.getOwnPropertyDescriptor(target, key);
  }
  ownKeys(target: unknown[]): ArrayLike<string | symbol> {
    this.materialize();
    return Reflected.ownKeys(target);
  }
  preventExtensions(target: unknown[]): boolean {
    this.materialize();
    return Reflected.preventExtensions(target);
  }
}

/**
 * `toJSON` of a lazy array (unless the handler gave arrays one of its own). While
 * {@link serializeValue} runs, an untouched array becomes a placeholder string that is replaced by
 * its text afterwards. Otherwise (the handler's own `JSON.stringify`, `json(...)` of an endpoint)
 * it is its real array, parsed, which `JSON.stringify` walks without a trap per element.
 */
function lazyToJSON(this: unknown): unknown {
  const rows = backingOf(this as object);
  if (!rows) return this;
  if (rows.text === undefined || serializing === undefined) {
    rows.materialize();
    return rows.target;
  }
  serializing.push(rows.text);
  return `${MARK}${serializing.length - 1}`;
}

/** Rows the host sent as `rowsJson` (a JSON array of `count` rows), parsed when first touched. */
export function lazyRows(rowsJson: string, count: number): unknown[] {
  const target = new Array<unknown>(count);
  const rows = new LazyRows(rowsJson, target);
  const proxy = new Proxy(target, rows);
  back(proxy, rows);
  return proxy;
}

/** Whether `json[at]` is preceded by an odd number of backslashes (escaped inside a string). */
function escapedAt(json: string, at: number): boolean {
  let slashes = 0;
  for (let i = at - 1; i >= 0 && json.charCodeAt(i) === 92; i--) slashes++;
  return slashes % 2 === 1;
}

/**
 * Replaces the placeholders in `json` by the texts they stand for. Each must be a whole string
 * value, appear once and in the order handed out; otherwise (a handler's own `toJSON` played with
 * them) `undefined`, and the caller serializes the parsed rows instead.
 */
function splice(json: string, texts: readonly string[]): string | undefined {
  const parts: string[] = [];
  let from = 0;
  let found = 0;
  for (let at = json.indexOf(ESCAPED_MARK); at !== -1; at = json.indexOf(ESCAPED_MARK, at + 1)) {
    const open = at - 1;
    if (json[open] !== '"' || escapedAt(json, open)) return undefined;
    let close = at + ESCAPED_MARK.length;
    while (close < json.length && json.charCodeAt(close) >= 48 && json.charCodeAt(close) <= 57) close++;
    if (json[close] !== '"' || json[close + 1] === ":") return undefined;
    if (json.slice(at + ESCAPED_MARK.length, close) !== String(found) || found >= texts.length)
      return undefined;
    parts.push(json.slice(from, open), texts[found] as string);
    from = close + 1;
    found++;
  }
  if (found !== texts.length) return undefined;
  parts.push(json.slice(from));
  return parts.join("");
}

/**
 * `JSON.stringify(value)`, with untouched lazy rows written as the text they came as (the same
 * text: the host's rows are `JSON.stringify` output, which parsing and serializing again gives back
 * unchanged). Throws what `JSON.stringify` throws.
 */
export function serializeValue(value: unknown): string {
  const whole = typeof value === "object" && value !== null ? backingOf(value)?.untouchedText() : undefined;
  if (whole !== undefined) return whole;
  const texts: string[] = [];
  serializing = texts;
  let json: string;
  try {
    json = stringify(value === undefined ? null : value);
  } finally {
    serializing = undefined;
  }
  if (texts.length === 0) return json;
  return splice(json, texts) ?? stringify(value === undefined ? null : value);
}
