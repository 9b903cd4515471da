import { describe, expect, it } from "vitest";
import { lazyRows, serializeValue } from "./lazy-rows.js";

const ROWS = [
  { _id: "a1", title: 'quote " and \\ backslash', n: 1.5 },
  { _id: "b2", title: "line\nbreak \u2028 and é 🎉 \ud800 alone", n: -3 },
  { _id: "c3", title: "plain", n: 1e21, tags: ["x", { y: null }] },
];
const TEXT = JSON.stringify(ROWS);

/** A lazy array of {@link ROWS} and a plain twin parsed from the same text. */
function pair(): { lazy: unknown[]; plain: unknown[] } {
  return { lazy: lazyRows(TEXT, ROWS.length), plain: JSON.parse(TEXT) as unknown[] };
}

describe("lazy rows", () => {
  it("answers length and serializes without parsing its text", () => {
    // Not JSON at all: any parse would throw.
    const rows = lazyRows("[not json]", 3);
    expect(rows.length).toBe(3);
    expect(Array.isArray(rows)).toBe(true);
    expect(serializeValue(rows)).toBe("[not json]");
    expect(() => rows[0]).toThrow(SyntaxError);
  });

  it("returns the host's text unchanged, byte for byte what parsing and serializing gives", () => {
    const { lazy } = pair();
    expect(serializeValue(lazy)).toBe(TEXT);
    expect(JSON.stringify(JSON.parse(TEXT))).toBe(TEXT);
  });

  it("behaves as the parsed array under every array operation", () => {
    type Op = (rows: unknown[]) => unknown;
    const byN = (x: unknown, y: unknown) => (x as { n: number }).n - (y as { n: number }).n;
    const ops: Op[] = [
      (r) => r[1],
      (r) => r.at(-1),
      (r) => r.map((row) => (row as { title: string }).title),
      (r) => r.filter((row) => (row as { n: number }).n > 0),
      (r) => [...r].reverse(),
      (r) => r.sort(byN),
      (r) => r.reverse(),
      (r) => Object.keys(r),
      (r) => Object.entries(r),
      (r) => [1 in r, 5 in r, "length" in r],
      (r) => r.slice(1),
      (r) => r.concat([{ extra: true }]),
      (r) => r.indexOf(r[2]),
      (r) => r.includes(r[0]),
      (r) => {
        const out: unknown[] = [];
        for (const row of r) out.push(row);
        return out;
      },
      (r) => {
        r.push({ added: 1 });
        return r;
      },
      (r) => {
        r[0] = "replaced";
        return r;
      },
      (r) => {
        delete r[1];
        return [r, r.length, 1 in r];
      },
      (r) => {
        r.length = 1;
        return r;
      },
      (r) => {
        (r[0] as { title: string }).title = "changed";
        return r;
      },
      (r) => Object.freeze(r) && [Object.isFrozen(r), r],
      // biome-ignore lint/suspicious/useIsArray: what instanceof answers for the array is the point
      (r) => [r instanceof Array, Object.prototype.toString.call(r), r.constructor === Array],
      (r) => Object.getOwnPropertyDescriptor(r, "2"),
      (r) => JSON.stringify(r),
      (r) => ({ page: r, isDone: false }),
      (r) => r.map((row, i, array) => [array === r, i, row]),
      (r) =>
        r.filter(function (this: unknown, _row, _i, array) {
          return this === "this" && array === r;
        }, "this"),
      (r) => [r.find((_row, i) => i === 1), r.findIndex((_row, i) => i === 2), r.findLast(() => true)],
      (r) => [r.some((_row, _i, array) => array !== r), r.every((_row, _i, array) => array === r)],
      (r) => r.flatMap((row, i) => [i, row]),
      (r) =>
        r.reduce((sum: unknown[], row, i, array) => {
          sum.push(array === r, i, row);
          return sum;
        }, []),
      (r) => r.reduceRight((sum, row) => [sum, row]),
      (r) => {
        const seen: unknown[] = [];
        r.forEach((row, i, array) => {
          seen.push(row, i, array === r);
        });
        return seen;
      },
      (r) => [[...r.keys()], [...r.entries()], [...r.values()], r.join("|"), r.at(0), r.lastIndexOf(r[0])],
      (r) => [r.sort(byN) === r, r.reverse() === r, r],
      (r) => {
        // Pushed while walked: the walk sees what the handler's array holds.
        const seen: unknown[] = [];
        r.forEach((row, i) => {
          if (i === 0) r.push({ late: true });
          seen.push(row);
        });
        return seen;
      },
      (r) => (r.map as (...args: unknown[]) => unknown[]).call([1, 2], (x: number) => x * 2),
      (r) => {
        try {
          return r.map(undefined as unknown as () => unknown);
        } catch (error) {
          return String(error);
        }
      },
    ];
    for (const op of ops) {
      const { lazy, plain } = pair();
      const expected = JSON.stringify(op(plain));
      expect(serializeValue(op(lazy)), op.toString()).toBe(expected);
      expect(serializeValue(lazy), op.toString()).toBe(JSON.stringify(plain));
    }
  });

  it("splices rows wherever they sit in a result, and serializes touched ones as parsed", () => {
    const a = pair();
    const b = pair();
    const touched = pair();
    (touched.lazy[0] as { n: number }).n = 99;
    (touched.plain[0] as { n: number }).n = 99;
    const value = (x: unknown[], y: unknown[], z: unknown[]) => ({
      page: x,
      again: x,
      nested: [{ deeper: y }, "text", null],
      touched: z,
      isDone: true,
      continueCursor: 'cursor "with" quotes',
    });
    expect(serializeValue(value(a.lazy, b.lazy, touched.lazy))).toBe(
      JSON.stringify(value(a.plain, b.plain, touched.plain)),
    );
    // Spliced, not parsed: text that is no JSON comes out as it went in.
    const unparsed = lazyRows("[not json]", 1);
    expect(serializeValue({ page: unparsed, isDone: false })).toBe('{"page":[not json],"isDone":false}');
  });

  it("keeps a toJSON of the handler's own on the array or on Array.prototype", () => {
    const own = pair();
    for (const rows of [own.lazy, own.plain]) (rows as unknown as { toJSON(): string }).toJSON = () => "own";
    expect(serializeValue({ rows: own.lazy })).toBe(JSON.stringify({ rows: own.plain }));
    const proto = Array.prototype as unknown as { toJSON?: () => string };
    proto.toJSON = () => "everywhere";
    try {
      const { lazy, plain } = pair();
      expect(serializeValue(lazy)).toBe(JSON.stringify(plain));
      expect(serializeValue({ lazy })).toBe(JSON.stringify({ lazy: plain }));
    } finally {
      delete proto.toJSON;
    }
  });

  it("is not fooled by placeholder look-alikes in the handler's own data", () => {
    const mark = "\u0000platform-rows\u0000";
    for (const fake of [`${mark}0`, `${mark}1`, `x${mark}0`, `\\"${mark}0`, `${mark}0"`, `${mark}`]) {
      const { lazy, plain } = pair();
      for (const shape of [
        (rows: unknown[]) => [fake, rows],
        (rows: unknown[]) => [rows, fake],
        (rows: unknown[]) => ({ [fake]: rows, other: fake }),
        (rows: unknown[]) => ({ rows, [fake]: 1 }),
      ])
        expect(serializeValue(shape(lazy)), JSON.stringify(fake)).toBe(JSON.stringify(shape(plain)));
    }
  });

  it("falls back to the parsed rows when a handler's toJSON plays with a placeholder", () => {
    const { lazy, plain } = pair();
    const stealing = (rows: unknown[]) => ({
      toJSON() {
        const placeholder = (rows as unknown as { toJSON?: () => unknown }).toJSON?.();
        return { [String(placeholder)]: 1, copy: placeholder, twice: [placeholder, placeholder] };
      },
    });
    // The plain array has no toJSON: its twin serializes `undefined` where the placeholder was.
    const got = JSON.parse(serializeValue([stealing(lazy), lazy])) as unknown[];
    expect(got[1]).toEqual(plain);
    expect(JSON.stringify(got)).not.toContain("platform-rows");
  });

  it("refuses rows that do not match their count once touched", () => {
    const rows = lazyRows(TEXT, 2);
    expect(() => rows[0]).toThrow(/do not match their count/);
  });

  it("agrees with JSON.stringify on random mixes of rows, look-alikes and escapes", () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pieces = ["\u0000platform-rows\u0000", "0", "1", '"', "\\", ":", ",", "]", "x"];
    const text = () =>
      Array.from(
        { length: 1 + Math.floor(random() * 4) },
        () => pieces[Math.floor(random() * pieces.length)],
      ).join("");
    for (let round = 0; round < 300; round++) {
      const twins: [unknown, unknown][] = [];
      for (let i = 0; i < 5; i++) {
        const choice = random();
        if (choice < 0.4) {
          const { lazy, plain } = pair();
          if (random() < 0.3) {
            (lazy as unknown[]).push("touched");
            (plain as unknown[]).push("touched");
          }
          twins.push([lazy, plain]);
        } else if (choice < 0.8) {
          const s = text();
          twins.push([s, s]);
        } else {
          const key = text();
          const { lazy, plain } = pair();
          twins.push([{ [key]: lazy }, { [key]: plain }]);
        }
      }
      const lazyValue = twins.map(([x]) => x);
      const plainValue = twins.map(([, y]) => y);
      expect(serializeValue(lazyValue)).toBe(JSON.stringify(plainValue));
    }
  });
});
