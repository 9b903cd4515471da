/**
 * Dates parsed from long strings, bounded: V8's date parser walks the whole string in C++
 * (`Date.parse("2020-01-01" + " ".repeat(1e8))` held the thread 1.2 s). A string longer than
 * {@link MAX_DATE_TEXT} is no date a capsule means, so it parses as an invalid one (NaN), as any
 * unrecognised string does (docs/security.md, "Isolates"; determinism.ts installs these in its
 * frozen `Date`).
 */
import { apply, isReceiverOf, type Method } from "./builtin-wrap.js";

/** The longest string parsed as a date. */
export const MAX_DATE_TEXT = 1024;

const getTime = Date.prototype.getTime as (this: unknown) => number;
const notANumber = Number.NaN;
const toPrimitiveKey = Symbol.toPrimitive;

function isDate(value: unknown): boolean {
  return isReceiverOf(getTime as Method, value);
}

/** ToPrimitive(`value`, default), once, as `new Date(value)` takes it. */
function toPrimitive(value: object): unknown {
  const exotic = (value as { [toPrimitiveKey]?: unknown })[toPrimitiveKey];
  if (exotic !== undefined && exotic !== null) {
    if (typeof exotic !== "function") throw new TypeError("Symbol.toPrimitive is not a function");
    const result = apply(exotic as Method, value, ["default"]);
    if (result !== null && (typeof result === "object" || typeof result === "function"))
      throw new TypeError("Cannot convert object to primitive value");
    return result;
  }
  // An index loop: an array iterator capsule code replaced must not choose the methods.
  const names = ["valueOf", "toString"];
  for (let i = 0; i < 2; i++) {
    const method = (value as Record<string, unknown>)[names[i] as string];
    if (typeof method !== "function") continue;
    const result = apply(method as Method, value, []);
    if (result === null || (typeof result !== "object" && typeof result !== "function")) return result;
  }
  throw new TypeError("Cannot convert object to primitive value");
}

/** What `new Date(value)` (one argument) may take: a string past {@link MAX_DATE_TEXT} as NaN. */
export function dateArgument(value: unknown): unknown {
  if (value !== null && (typeof value === "object" || typeof value === "function") && !isDate(value))
    value = toPrimitive(value);
  return typeof value === "string" && value.length > MAX_DATE_TEXT ? notANumber : value;
}

/** `Date.parse` through {@link MAX_DATE_TEXT}. */
export function boundedDateParse(parse: (text: string) => number): (text: string) => number {
  return {
    parse(value: unknown): number {
      const text = `${value as string}`;
      return text.length > MAX_DATE_TEXT ? notANumber : parse(text);
    },
  }.parse;
}
