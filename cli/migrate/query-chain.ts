/**
 * Rewrites one legacy database call chain (`ctx.db.<table>.where(...).orderBy(...).all()`,
 * `get`, `insert`, ...) to its awaited v1 form, recording the index a filtered or ordered query
 * needs.
 */
import ts from "typescript";
import { type EditedSource, isDb } from "./source-edits.js";

/** Legacy calls that end a chain. */
export const TERMINALS: ReadonlySet<string> = new Set(["all", "first", "get", "insert", "update", "delete"]);
/** Legacy calls that refine a query before its terminal. */
const CHAIN = new Set(["where", "orderBy", "limit"]);

/** What rewriting a chain needs from the file being rewritten. */
export interface ChainContext {
  readonly file: EditedSource;
  /** Nodes a rewritten chain already covers: neither rewritten twice nor reported as unfollowed. */
  readonly consumed: Set<ts.Node>;
  /** Indexes the rewritten queries need, table -> index name -> fields (shared by every file). */
  readonly indexes: Record<string, Record<string, string[]>>;
}

type Step = { name: string; call: ts.CallExpression };

function enclosingFunction(node: ts.Node): ts.Node | undefined {
  let current = node.parent;
  while (current && !ts.isFunctionLike(current)) current = current.parent;
  return current;
}

/** Rewrites one call chain ending in a terminal, if it is rooted at `<ctx>.db.<table>`. */
export function rewriteChain(
  context: ChainContext,
  call: ts.CallExpression,
  handler: ts.Node,
  ctx: string,
): void {
  const { file, consumed } = context;
  const steps: Step[] = [];
  let current: ts.Expression = call;
  while (ts.isCallExpression(current) && ts.isPropertyAccessExpression(current.expression)) {
    steps.unshift({ name: current.expression.name.text, call: current });
    current = current.expression.expression;
  }
  if (!ts.isPropertyAccessExpression(current) || !isDb(current.expression, ctx)) return;
  const table = current.name.text;
  const tableNode = current;
  const terminal = steps.at(-1) as Step;
  const middle = steps.slice(0, -1);
  const mark = () => {
    consumed.add(tableNode);
    consumed.add(tableNode.expression);
    for (const step of steps) consumed.add(step.call);
  };
  if (enclosingFunction(call) !== handler) {
    mark();
    file.note(
      call,
      `A database call inside a nested function: make that function async and await ${table}.${terminal.name}(...) by hand.`,
    );
    return;
  }
  const db = `${file.render(tableNode.expression)}.${table}`;
  const args = (c: ts.CallExpression) => c.arguments.map((a) => file.render(a)).join(", ");
  let rewritten: string | undefined;
  if (["get", "update", "delete"].includes(terminal.name) && middle.length === 0) {
    rewritten = `${db}.${terminal.name}(${args(terminal.call)})`;
  } else if (terminal.name === "insert" && middle.length === 0) {
    // Legacy insert returned the row; v1 returns its id: read the row back where the result is used.
    const insert = `await ${db}.insert(${args(terminal.call)})`;
    rewritten = ts.isExpressionStatement(call.parent)
      ? insert.slice("await ".length)
      : `${db}.get(${insert})`;
  } else if (terminal.name === "all" || terminal.name === "first") {
    rewritten = indexedQuery(context, db, table, middle, terminal.name, call);
  }
  mark();
  if (rewritten === undefined) {
    file.note(
      call,
      `This ${table} query chain (${steps.map((s) => s.name).join(".")}) has no v1 equivalent the codemod knows; rewrite it by hand.`,
    );
    return;
  }
  const awaited = `await ${rewritten}`;
  const bare =
    ts.isExpressionStatement(call.parent) ||
    ts.isReturnStatement(call.parent) ||
    ts.isVariableDeclaration(call.parent) ||
    ts.isArrowFunction(call.parent) ||
    ts.isAwaitExpression(call.parent);
  if (ts.isAwaitExpression(call.parent)) file.replace(call, rewritten);
  else file.replace(call, bare ? awaited : `(${awaited})`);
  file.rewrites++;
}

/** `where(...)*.orderBy(...)?.limit(n)?` + `all()`/`first()` -> `withIndex(...)` + v1 terminal. */
function indexedQuery(
  context: ChainContext,
  db: string,
  table: string,
  steps: Step[],
  terminal: "all" | "first",
  node: ts.Node,
): string | undefined {
  const { file, indexes } = context;
  const equal: Array<{ field: string; value: string }> = [];
  let order: { field: string; direction: "asc" | "desc" } | undefined;
  let limit: string | undefined;
  for (const step of steps) {
    if (!CHAIN.has(step.name)) return undefined;
    const [first, second] = step.call.arguments;
    if (step.name === "where") {
      if (order || limit || !first || !ts.isStringLiteral(first) || !second) return undefined;
      equal.push({ field: first.text, value: file.render(second) });
    } else if (step.name === "orderBy") {
      if (order || limit || !first || !ts.isStringLiteral(first)) return undefined;
      if (second && !(ts.isStringLiteral(second) && (second.text === "asc" || second.text === "desc")))
        return undefined;
      order = {
        field: first.text,
        direction: second && ts.isStringLiteral(second) ? (second.text as "asc" | "desc") : "asc",
      };
    } else if (step.name === "limit") {
      if (limit || !first) return undefined;
      limit = file.render(first);
    }
  }
  const fields = equal.map((e) => e.field);
  if (order && order.field !== "createdAt" && !fields.includes(order.field)) fields.push(order.field);
  if (new Set(fields).size !== fields.length) {
    file.note(node, `This ${table} query filters one field twice; rewrite it by hand.`);
    return undefined;
  }
  let text = db;
  if (fields.length > 0) {
    const name = `by_${fields.join("_")}`;
    indexes[table] ??= {};
    (indexes[table] as Record<string, string[]>)[name] = fields;
    const range = equal.map((e) => `.eq(${JSON.stringify(e.field)}, ${e.value})`).join("");
    text += range
      ? `.withIndex(${JSON.stringify(name)}, (q) => q${range})`
      : `.withIndex(${JSON.stringify(name)})`;
  }
  if (order?.direction === "desc") text += `.order("desc")`;
  if (terminal === "first") return `${text}.first()`;
  return limit === undefined ? `${text}.collect()` : `${text}.take(${limit})`;
}
