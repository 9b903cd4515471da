/**
 * The frozen clock has no hole: a capsule tries every path to the current time it can reach from
 * a query or a mutation (constructor chains, subclasses, Reflect, Intl, timers) after letting real
 * time pass, and every reading must equal the execution's frozen time. Runs inline on the host's
 * main thread and on the isolate's own thread.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeOnBothTransports, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

/** Reads the time every way it can; each reading is a number (epoch ms) or a formatted string. */
const HANDLER = `async (ctx) => {
  const frozen = Date.now();
  // Let real time pass: platform calls and some work, so a leaked real clock reads later.
  let spin = 0;
  for (let round = 0; round < 20; round++) {
    await ctx.db.items.count();
    for (let i = 0; i < 200000; i++) spin = (spin + i) % 7;
  }
  const attempt = (read) => { try { return read(); } catch (e) { return "refused: " + e.name; } };
  const ms = { timeZone: "UTC", hour12: false, hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 };
  const formatter = new Intl.DateTimeFormat("en-US", ms);
  const RealLooking = Object.getPrototypeOf(new Date(0)).constructor;
  class Later extends Date {}
  const readings = {
    "Date.now()": Date.now(),
    "new Date()": new Date().getTime(),
    "new Date().valueOf()": +new Date(),
    "Date()": Date(),
    "Date.prototype.constructor.now()": Date.prototype.constructor.now(),
    "new Date.prototype.constructor()": new Date.prototype.constructor().getTime(),
    "Date.prototype.constructor()": Date.prototype.constructor(),
    "new (Object.getPrototypeOf(new Date()).constructor)()": new RealLooking().getTime(),
    "new Date().constructor.now()": new Date(0).constructor.now(),
    "Reflect.construct(Date, [])": Reflect.construct(Date, []).getTime(),
    "Reflect.construct(prototype constructor, [])": Reflect.construct(RealLooking, []).getTime(),
    "Reflect.apply(Date, undefined, [])": Reflect.apply(Date, undefined, []),
    "new (class extends Date)()": new Later().getTime(),
    "subclass static now()": Later.now(),
    "JSON.stringify(new Date())": JSON.parse(JSON.stringify(new Date())),
    "Intl.DateTimeFormat().format()": formatter.format(),
    "Intl.DateTimeFormat().format(undefined)": formatter.format(undefined),
    "Intl.DateTimeFormat().formatToParts()": formatter.formatToParts().map((p) => p.value).join(""),
    "Intl format getter from the prototype": Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, "format").get.call(formatter)(),
    "Intl.DateTimeFormat.prototype.formatToParts.call()": Intl.DateTimeFormat.prototype.formatToParts.call(formatter).map((p) => p.value).join(""),
    "new Date().toLocaleString()": new Date().toLocaleString("en-US", ms),
    "Function('return Date')()": attempt(() => (function () {}).constructor("return Date")()),
    "performance.now()": typeof performance === "undefined" ? "absent" : performance.timeOrigin + performance.now(),
    "Temporal.Now": typeof Temporal === "undefined" ? "absent" : Temporal.Now.instant().epochMilliseconds,
    "structuredClone(new Date())": typeof structuredClone === "undefined" ? "absent" : structuredClone(new Date()).getTime(),
    "Atomics.waitAsync (a timer)": typeof Atomics.waitAsync,
  };
  return { frozen, spin, instanceOfLater: new Later() instanceof Later, readings };
}`;

const SOURCE = `import { capsule, table, number } from "platform/server";
export default capsule({ schema: { items: table({ n: number() }) }, queries: { clock: ${HANDLER} }, mutations: { clock: ${HANDLER} } });
`;

interface ClockReport {
  frozen: number;
  instanceOfLater: boolean;
  readings: Record<string, unknown>;
}

/** What each reading must be when it comes from the frozen time `frozen`. */
function expectedReadings(frozen: number): Record<string, unknown> {
  const ms: Intl.DateTimeFormatOptions = {
    timeZone: "UTC",
    hour12: false,
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    fractionalSecondDigits: 3,
  };
  const formatted = new Intl.DateTimeFormat("en-US", ms).format(frozen);
  const dateString = new Date(frozen).toString();
  return {
    "Date.now()": frozen,
    "new Date()": frozen,
    "new Date().valueOf()": frozen,
    "Date()": dateString,
    "Date.prototype.constructor.now()": frozen,
    "new Date.prototype.constructor()": frozen,
    "Date.prototype.constructor()": dateString,
    "new (Object.getPrototypeOf(new Date()).constructor)()": frozen,
    "new Date().constructor.now()": frozen,
    "Reflect.construct(Date, [])": frozen,
    "Reflect.construct(prototype constructor, [])": frozen,
    "Reflect.apply(Date, undefined, [])": dateString,
    "new (class extends Date)()": frozen,
    "subclass static now()": frozen,
    "JSON.stringify(new Date())": new Date(frozen).toISOString(),
    "Intl.DateTimeFormat().format()": formatted,
    "Intl.DateTimeFormat().format(undefined)": formatted,
    "Intl.DateTimeFormat().formatToParts()": formatted,
    "Intl format getter from the prototype": formatted,
    "Intl.DateTimeFormat.prototype.formatToParts.call()": formatted,
    "new Date().toLocaleString()": new Date(frozen).toLocaleString("en-US", ms),
    "Function('return Date')()": "refused: EvalError",
    "performance.now()": "absent",
    "Temporal.Now": "absent",
    "structuredClone(new Date())": "absent",
    "Atomics.waitAsync (a timer)": "undefined",
  };
}

/** `Date()` strings carry a time zone name; compare them by the instant they name. */
function normalise(readings: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(readings)) {
    const isDateString = typeof value === "string" && /^[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{4} /.test(value);
    out[name] = isDateString
      ? `${value.slice(0, 3)} ${new Date(Date.parse(value)).toISOString().replace(/\.\d{3}Z$/, "")}`
      : value;
  }
  return out;
}

describeOnBothTransports((inline) => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startTestHost({
      pool: {
        limits: { cpuMs: 5000, wallMs: 20_000, memoryMb: 64, resultBytes: 8 * 1024 * 1024 },
        inline,
      },
    });
    const deployed = await host.deployCode("clock", await sourceCode(SOURCE));
    expect(deployed.status, deployed.text()).toBe(201);
  });
  afterAll(async () => {
    await host.dispose();
  });

  for (const kind of ["query", "mutation"] as const) {
    it(`every path to the time in a ${kind} reads the frozen time`, async () => {
      const started = Date.now();
      const response = await host.call("clock", kind, "clock");
      expect(response.status, response.text()).toBe(200);
      const { frozen, instanceOfLater, readings } = response.json<{ value: ClockReport }>().value;
      console.log(`${kind}: frozen at ${frozen}, answered ${Date.now() - started} ms after the call`);
      expect(Math.abs(frozen - started)).toBeLessThan(60_000);
      expect(normalise(readings)).toEqual(normalise(expectedReadings(frozen)));
      expect(instanceOfLater).toBe(true);
    }, 60_000);
  }
});
