import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { emptyReadSet, type ReadSet } from "../db/index.js";
import type { Outcome, QueryFailure } from "./group.js";
import type { HeldLimits } from "./held-bytes.js";

/**
 * What a run refused before it read anything depends on: nothing of the data when it was refused
 * for good (a 4xx such as no such query, which only a redeploy changes), else everything (undefined:
 * every commit re-runs it), since a busy or paused deployment or a spent quota passes.
 */
export function readSetOfRefusal(error: unknown): ReadSet | undefined {
  return isPlatformError(error) && error.status < 500 && error.code !== "limit_exceeded"
    ? emptyReadSet()
    : undefined;
}

/** True when subscribers who saw `last` need not be told `next`. */
export function sameOutcome(last: Outcome | undefined, next: Outcome): boolean {
  if (!last) return false;
  if (next.error) return last.error?.code === next.error.code && last.error.message === next.error.message;
  return last.valueJson === next.valueJson;
}

/** Anything beyond Latin-1: V8 then keeps the whole string at two bytes a character. */
const WIDE_CHARACTER = /[\u0100-\uffff]/;

/** What an outcome holds in memory: its JSON's characters, two bytes each when any needs them. */
export function outcomeBytes(outcome: Outcome): number {
  const text = outcome.valueJson ?? (outcome.error ? outcome.error.message + outcome.error.code : "");
  return WIDE_CHARACTER.test(text) ? 2 * text.length : text.length;
}

/**
 * The failure of a run whose result and read set would pass `passed`, one of `limits`
 * ({@link LIMITS.liveStateBytes} and the two beside it): what is wrong and what to do.
 */
export function liveStateExceeded(passed: keyof HeldLimits, limits: HeldLimits): QueryFailure {
  const whose = {
    deployment: `This deployment's live queries hold more than ${limits.deployment} bytes of results and read sets`,
    caller: `The live queries each client subscribed to this one started hold more than ${limits.caller} bytes of results and read sets (a client's share of this deployment's)`,
    host: `This host's live queries hold more than ${limits.host} bytes of results and read sets, and this deployment's more than its even share`,
  }[passed];
  return {
    code: "limit_exceeded",
    message: `${whose}, and this one would take them past it; it runs again as room frees and as writes come. Subscribe to fewer or smaller queries (paginate, or pass ids rather than data).`,
  };
}

/** The refusal for passing each of `limits`. */
export function liveStateRefusals(limits: HeldLimits): Record<keyof HeldLimits, Outcome> {
  return {
    deployment: { error: liveStateExceeded("deployment", limits) },
    caller: { error: liveStateExceeded("caller", limits) },
    host: { error: liveStateExceeded("host", limits) },
  };
}
