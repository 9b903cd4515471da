/**
 * The dev terminal tells the truth: `platform dev` prints every call, a failure with its code,
 * message and a stack in the capsule's source (callers never see it); `platform logs` shows each
 * failure's message; the capsule is type-checked in the background without holding up redeploys;
 * and a save that renames a new file over the old one redeploys.
 */
import { cp, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { type CliProcess, runCli, startDev } from "./helpers/cli.js";

let dir: string;
let file: string;
let source: string;
let dev: CliProcess;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-dev-terminal-"));
  await cp("fixtures/todo", dir, { recursive: true });
  file = join(dir, "server", "index.ts");
  source = await readFile(file, "utf8");
  ({ dev, port } = await startDev(dir));
}, 60_000);
afterAll(async () => {
  await dev.stop();
  await rm(dir, { recursive: true, force: true });
});

const call = (kind: string, name: string, args: unknown = {}) =>
  sendRequest(`http://localhost:${port}/api/${kind}/${name}`, { method: "POST", body: JSON.stringify(args) });

/** Waits until `platform dev` has printed `text` at the start of a line at least `times` times. */
const printed = (text: string, times: number) =>
  dev.waitFor(new RegExp(`(?:[\\s\\S]*?^${text}){${times}}`, "m"), 60_000);

const deploys = () => dev.output().match(/^deployed /gm)?.length ?? 0;

/** 1-based line and column of `needle` in `text`, as V8 and editors count them. */
function positionOf(text: string, needle: string): string {
  const before = text.slice(0, text.indexOf(needle)).split("\n");
  return `${before.length}:${(before.at(-1) as string).length + 1}`;
}

/** The todo capsule with `count` rewritten to `body`. */
const withCount = (body: string) =>
  source.replace("count: async (ctx) => ctx.db.todos.count(),", `count: async (ctx) => ${body},`);

it("prints a failed call with its code, message and source-mapped stack, which callers never get", async () => {
  const at = `server/index.ts:${positionOf(source, "new Error(`No todo ")}`;
  const response = await call("mutation", "toggle", { id: "todos:missing" });
  expect(response.status).toBe(500);
  expect(response.json()).toEqual({
    error: { code: "handler_error", message: "Uncaught Error: No todo todos:missing" },
  });
  await dev.waitFor(
    new RegExp(
      `mutation toggle handler_error [\\d.]+ ms: Uncaught Error: No todo todos:missing\\n {4}at toggle \\(${at}\\)\\n`,
    ),
  );
  expect((await call("query", "count")).json()).toEqual({ value: 0 });
  await dev.waitFor(/\d\d:\d\d:\d\d\.\d{3} query count ok [\d.]+ ms\n/);

  const human = runCli(["logs", "--port", String(port)]);
  expect(human.status).toBe(0);
  expect(human.stdout).toMatch(
    new RegExp(
      `mutation toggle handler_error: Uncaught Error: No todo todos:missing · .*\\n {4}at toggle \\(${at}\\)\\n`,
    ),
  );
  const json = runCli(["logs", "--port", String(port), "--json"]);
  const lines = json.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { call?: { outcome: string; error?: unknown } });
  expect(lines.find((line) => line.call?.outcome === "handler_error")?.call?.error).toEqual({
    message: "Uncaught Error: No todo todos:missing",
    stack: `    at toggle (${at})`,
  });
}, 60_000);

it("prints the handler's line for a failed database call it awaited", async () => {
  // An update of a row that is not there: the host refuses it, and the runtime throws where the
  // handler awaits (V8's async stack traces follow awaits: the runtime's update returned its
  // call, and the stack ended inside the runtime).
  const changed = source.replace(
    "add: async (ctx, args: { text: string }) => ctx.db.todos.insert({ text: args.text }),",
    'add: async (ctx) => { await ctx.db.todos.update("bogus" as never, { done: true }); return "x"; },',
  );
  const before = deploys();
  await writeFile(file, changed);
  await printed("deployed ", before + 1);
  expect((await call("mutation", "add", { text: "a" })).status).toBe(404);
  const at = `server/index.ts:${positionOf(changed, 'await ctx.db.todos.update("bogus"')}`;
  await dev.waitFor(
    new RegExp(
      `mutation add not_found [\\d.]+ ms: Cannot update: no row bogus in table todos\\.\\n {4}at async add \\(${at}\\)\\n`,
    ),
  );
  await writeFile(file, source);
  await printed("deployed ", before + 2);
}, 60_000);

it("type-checks in the background: reports a deliberate type error, and the edit deploys anyway", async () => {
  await printed("type check: no errors", 1);
  const before = deploys();
  const broken = withCount("{ const total: string = (await ctx.db.todos.count()) + 1000; return total; }");
  await writeFile(file, broken);
  await printed(`deployed `, before + 1);
  expect((await call("query", "count")).json()).toEqual({ value: 1000 });
  const at = positionOf(broken, "total: string");
  await dev.waitFor(
    new RegExp(
      `type check: 1 error\\n {2}server/index\\.ts:${at} - error TS2322: Type 'number' is not assignable to type 'string'\\.\\n`,
    ),
    60_000,
  );
  await writeFile(file, source);
  await printed("type check: no errors", 2);
}, 120_000);

it("redeploys after saves that rename (a new file over the old one, or the old one away first), and after later saves", async () => {
  // Written outside server/, so only the rename reaches the watcher.
  const scratch = join(dir, "index.ts.new");
  await writeFile(scratch, withCount("(await ctx.db.todos.count()) + 2000"));
  let before = deploys();
  await rename(scratch, file);
  await printed("deployed ", before + 1);
  expect((await call("query", "count")).json()).toEqual({ value: 2000 });

  // vim's way (backupcopy=no): the old file renamed to a backup, then a new one written.
  before = deploys();
  await rename(file, `${file}~`);
  await writeFile(file, withCount("(await ctx.db.todos.count()) + 3000"));
  await printed("deployed ", before + 1);
  expect((await call("query", "count")).json()).toEqual({ value: 3000 });

  // The new file is watched too (Node 20's recursive fs.watch loses it after the step above).
  before = deploys();
  await writeFile(file, withCount("(await ctx.db.todos.count()) + 4000"));
  await printed("deployed ", before + 1);
  expect((await call("query", "count")).json()).toEqual({ value: 4000 });
}, 120_000);
