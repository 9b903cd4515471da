/**
 * `platform migrate`'s codemod: rewrites a legacy capsule (`platform/legacy`, database API v0) to
 * database API v1 (`platform/server`) with the TypeScript compiler API, and lists by file and line
 * what it could not rewrite. It edits text spans found by walking the syntax tree, so everything
 * it does not touch keeps its formatting and comments.
 */
import ts from "typescript";

/** Something the codemod left for a human, or a change callers must follow. */
export interface MigrationNote {
  file: string;
  line: number;
  message: string;
}

/** One file's result. */
export interface FileRewrite {
  file: string;
  text: string;
  changed: boolean;
}

/** The whole capsule's result. */
export interface CodemodResult {
  files: FileRewrite[];
  /** Indexes added to the schema: table -> index name -> fields. */
  indexes: Record<string, Record<string, string[]>>;
  /** Handlers made async and database calls awaited. */
  rewrites: number;
  /** What could not be rewritten (the author must finish it). */
  unresolved: MigrationNote[];
  /** Changes callers must make (positional mutation arguments became an object). */
  callers: MigrationNote[];
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

const TERMINALS = new Set(["all", "first", "get", "insert", "update", "delete"]);
const CHAIN = new Set(["where", "orderBy", "limit"]);

/** Applies the edits inside [start, end) to the source text; outer edits win over inner ones. */
function render(text: string, edits: Edit[], start: number, end: number): string {
  const inside = edits
    .filter((e) => e.start >= start && e.end <= end)
    .sort((a, b) => a.start - b.start || b.end - a.end);
  let out = "";
  let at = start;
  for (const edit of inside) {
    if (edit.start < at) continue; // contained in an edit already applied
    out += text.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + text.slice(at, end);
}

class FileCodemod {
  readonly edits: Edit[] = [];
  readonly unresolved: MigrationNote[] = [];
  readonly callers: MigrationNote[] = [];
  rewrites = 0;
  private readonly source: ts.SourceFile;
  private readonly consumed = new Set<ts.Node>();

  constructor(
    readonly file: string,
    readonly text: string,
    private readonly indexes: Record<string, Record<string, string[]>>,
  ) {
    this.source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  }

  private line(node: ts.Node): number {
    return this.source.getLineAndCharacterOfPosition(node.getStart(this.source)).line + 1;
  }

  private note(node: ts.Node, message: string): void {
    this.unresolved.push({ file: this.file, line: this.line(node), message });
  }

  private render(node: ts.Node): string {
    return render(this.text, this.edits, node.getStart(this.source), node.getEnd());
  }

  private replace(node: ts.Node, text: string): void {
    this.edits.push({ start: node.getStart(this.source), end: node.getEnd(), text });
  }

  /** The local name `platform/legacy`'s `app` is imported as, when this file imports it. */
  legacyImport(): { declaration: ts.ImportDeclaration; app?: string } | undefined {
    for (const statement of this.source.statements) {
      if (
        ts.isImportDeclaration(statement) &&
        ts.isStringLiteral(statement.moduleSpecifier) &&
        statement.moduleSpecifier.text === "platform/legacy"
      ) {
        const named = statement.importClause?.namedBindings;
        const app =
          named && ts.isNamedImports(named)
            ? named.elements.find((e) => (e.propertyName ?? e.name).text === "app")?.name.text
            : undefined;
        return app === undefined ? { declaration: statement } : { declaration: statement, app };
      }
    }
    return undefined;
  }

  /** The `app({...})` calls of this file. */
  appCalls(app: string): ts.CallExpression[] {
    const calls: ts.CallExpression[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === app)
        calls.push(node);
      ts.forEachChild(node, visit);
    };
    visit(this.source);
    return calls;
  }

  /** Rewrites the handlers of an `app({...})` call; records the indexes their queries need. */
  handlers(call: ts.CallExpression): void {
    const definition = call.arguments[0];
    if (!definition || !ts.isObjectLiteralExpression(definition)) {
      this.note(call, "app(...) is not called with an object literal; rewrite it by hand.");
      return;
    }
    for (const kind of ["queries", "mutations"] as const) {
      const member = property(definition, kind);
      if (!member) continue;
      if (!ts.isObjectLiteralExpression(member)) {
        this.note(member, `${kind} is not an object literal; rewrite its handlers by hand.`);
        continue;
      }
      for (const handler of member.properties) this.handler(handler, kind === "mutations");
    }
  }

  private handler(member: ts.ObjectLiteralElementLike, mutation: boolean): void {
    const fn = ts.isMethodDeclaration(member)
      ? member
      : ts.isPropertyAssignment(member) &&
          (ts.isArrowFunction(member.initializer) || ts.isFunctionExpression(member.initializer))
        ? member.initializer
        : undefined;
    const name =
      member.name && ts.isIdentifier(member.name) ? member.name.text : member.name?.getText(this.source);
    if (!fn) {
      this.note(
        member,
        `Handler ${name ?? "?"} is not defined inline; make it async and await its database calls by hand.`,
      );
      return;
    }
    const ctx = fn.parameters[0]?.name;
    if (!ctx || !ts.isIdentifier(ctx)) {
      this.note(member, `Handler ${name} has no ctx parameter to follow.`);
      return;
    }
    const seen: ts.PropertyAccessExpression[] = [];
    this.walk(fn.body, fn, ctx.text, seen);
    // Uses of ctx.db that no rewritten chain consumed (checked after the walk: chains end above them).
    for (const node of seen) {
      if (this.consumed.has(node)) continue;
      const parent = node.parent;
      if (ts.isElementAccessExpression(parent))
        this.note(parent, "ctx.db is indexed with a computed table name; rewrite this call by hand.");
      else
        this.note(
          node,
          "ctx.db is used in a way the codemod does not follow (a stored query or a helper); rewrite it by hand.",
        );
    }
    if (!fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) {
      const at = fn.getStart(this.source);
      this.edits.push({ start: at, end: at, text: "async " });
      this.rewrites++;
    }
    if (mutation && fn.parameters.length > 1) this.positional(fn, name ?? "?");
  }

  /** `(ctx, a: A, b: B)` -> `(ctx, { a, b }: { a: A; b: B })`: v1 mutations take one argument object. */
  private positional(fn: ts.FunctionLikeDeclaration, name: string): void {
    const params = fn.parameters.slice(1);
    if (params.some((p) => !ts.isIdentifier(p.name) || p.dotDotDotToken || p.initializer)) {
      this.note(
        fn,
        `Mutation ${name} has rest, default or destructured parameters; turn them into one argument object by hand.`,
      );
      return;
    }
    const names = params.map((p) => (p.name as ts.Identifier).text);
    const typed = params.every((p) => p.type);
    const type = typed
      ? `: { ${params.map((p) => `${(p.name as ts.Identifier).text}${p.questionToken ? "?" : ""}: ${p.type?.getText(this.source)}`).join("; ")} }`
      : "";
    const first = params[0] as ts.ParameterDeclaration;
    const last = params.at(-1) as ts.ParameterDeclaration;
    this.edits.push({
      start: first.getStart(this.source),
      end: last.getEnd(),
      text: `{ ${names.join(", ")} }${type}`,
    });
    this.callers.push({
      file: this.file,
      line: this.line(fn),
      message: `mutation ${name} took positional arguments (${names.join(", ")}); it now takes one object { ${names.join(", ")} }: update its callers`,
    });
  }

  /** Finds database calls rooted at `<ctx>.db` inside a handler (post-order: inner calls first). */
  private walk(
    node: ts.Node | undefined,
    handler: ts.Node,
    ctx: string,
    seen: ts.PropertyAccessExpression[],
  ): void {
    if (!node) return;
    ts.forEachChild(node, (child) => this.walk(child, handler, ctx, seen));
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const terminal = node.expression.name.text;
      if (TERMINALS.has(terminal) && !this.consumed.has(node)) this.chain(node, handler, ctx);
    }
    if (isDb(node, ctx)) seen.push(node);
  }

  /** Rewrites one call chain ending in a terminal, if it is rooted at `<ctx>.db.<table>`. */
  private chain(call: ts.CallExpression, handler: ts.Node, ctx: string): void {
    const steps: Array<{ name: string; call: ts.CallExpression }> = [];
    let current: ts.Expression = call;
    while (ts.isCallExpression(current) && ts.isPropertyAccessExpression(current.expression)) {
      steps.unshift({ name: current.expression.name.text, call: current });
      current = current.expression.expression;
    }
    if (!ts.isPropertyAccessExpression(current) || !isDb(current.expression, ctx)) return;
    const table = current.name.text;
    const tableNode = current;
    const terminal = steps.at(-1) as { name: string; call: ts.CallExpression };
    const middle = steps.slice(0, -1);
    const mark = () => {
      this.consumed.add(tableNode);
      this.consumed.add(tableNode.expression);
      for (const step of steps) this.consumed.add(step.call);
    };
    if (enclosingFunction(call) !== handler) {
      mark();
      this.note(
        call,
        `A database call inside a nested function: make that function async and await ${table}.${terminal.name}(...) by hand.`,
      );
      return;
    }
    const db = `${this.render(tableNode.expression)}.${table}`;
    const args = (c: ts.CallExpression) => c.arguments.map((a) => this.render(a)).join(", ");
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
      rewritten = this.query(db, table, middle, terminal.name, call);
    }
    mark();
    if (rewritten === undefined) {
      this.note(
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
    if (ts.isAwaitExpression(call.parent)) this.replace(call, rewritten);
    else this.replace(call, bare ? awaited : `(${awaited})`);
    this.rewrites++;
  }

  /** `where(...)*.orderBy(...)?.limit(n)?` + `all()`/`first()` -> `withIndex(...)` + v1 terminal. */
  private query(
    db: string,
    table: string,
    steps: Array<{ name: string; call: ts.CallExpression }>,
    terminal: "all" | "first",
    node: ts.Node,
  ): string | undefined {
    const equal: Array<{ field: string; value: string }> = [];
    let order: { field: string; direction: "asc" | "desc" } | undefined;
    let limit: string | undefined;
    for (const step of steps) {
      if (!CHAIN.has(step.name)) return undefined;
      const [first, second] = step.call.arguments;
      if (step.name === "where") {
        if (order || limit || !first || !ts.isStringLiteral(first) || !second) return undefined;
        equal.push({ field: first.text, value: this.render(second) });
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
        limit = this.render(first);
      }
    }
    const fields = equal.map((e) => e.field);
    if (order && order.field !== "createdAt" && !fields.includes(order.field)) fields.push(order.field);
    if (new Set(fields).size !== fields.length) {
      this.note(node, `This ${table} query filters one field twice; rewrite it by hand.`);
      return undefined;
    }
    let text = db;
    if (fields.length > 0) {
      const name = `by_${fields.join("_")}`;
      this.indexes[table] ??= {};
      (this.indexes[table] as Record<string, string[]>)[name] = fields;
      const range = equal.map((e) => `.eq(${JSON.stringify(e.field)}, ${e.value})`).join("");
      text += range
        ? `.withIndex(${JSON.stringify(name)}, (q) => q${range})`
        : `.withIndex(${JSON.stringify(name)})`;
    }
    if (order?.direction === "desc") text += `.order("desc")`;
    if (terminal === "first") return `${text}.first()`;
    return limit === undefined ? `${text}.collect()` : `${text}.take(${limit})`;
  }

  /** Rewrites the schema of an `app({...})` call to `table({...})` with the indexes needed. */
  schema(call: ts.CallExpression): void {
    const definition = call.arguments[0];
    if (!definition || !ts.isObjectLiteralExpression(definition)) return;
    this.edits.push({
      start: call.expression.getStart(this.source),
      end: call.expression.getEnd(),
      text: "capsule",
    });
    const schema = property(definition, "schema");
    if (!schema || !ts.isObjectLiteralExpression(schema)) {
      if (schema)
        this.note(schema, "The schema is not an object literal; wrap each table in table({...}) by hand.");
      return;
    }
    for (const member of schema.properties) {
      if (!ts.isPropertyAssignment(member) || !ts.isObjectLiteralExpression(member.initializer)) {
        this.note(
          member,
          "A table of the schema is not an object literal of fields; wrap it in table({...}) by hand.",
        );
        continue;
      }
      const tableName =
        ts.isIdentifier(member.name) || ts.isStringLiteral(member.name) ? member.name.text : "";
      const wanted = this.indexes[tableName] ?? {};
      const suffix = Object.entries(wanted)
        .map(
          ([name, fields]) =>
            `.index(${JSON.stringify(name)}, [${fields.map((f) => JSON.stringify(f)).join(", ")}])`,
        )
        .join("");
      this.replace(member.initializer, `table(${this.render(member.initializer)})${suffix}`);
    }
  }

  /** `import { app, ... } from "platform/legacy"` -> `import { capsule, table, ... } from "platform/server"`. */
  imports(declaration: ts.ImportDeclaration): void {
    const named = declaration.importClause?.namedBindings;
    const kept =
      named && ts.isNamedImports(named)
        ? named.elements
            .map((e) => e.getText(this.source))
            .filter((text) => !/^app(\s+as\s+\w+)?$/.test(text))
        : [];
    const names = [...new Set(["capsule", "table", ...kept])].sort();
    this.replace(declaration, `import { ${names.join(", ")} } from "platform/server";`);
  }

  result(): FileRewrite {
    const text = render(this.text, this.edits, 0, this.text.length);
    return { file: this.file, text, changed: text !== this.text };
  }
}

function scriptKind(file: string): ts.ScriptKind {
  if (file.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (file.endsWith(".jsx")) return ts.ScriptKind.JSX;
  if (file.endsWith(".js") || file.endsWith(".mjs")) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

function property(object: ts.ObjectLiteralExpression, name: string): ts.Expression | undefined {
  for (const member of object.properties) {
    if (
      ts.isPropertyAssignment(member) &&
      (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name)) &&
      member.name.text === name
    )
      return member.initializer;
  }
  return undefined;
}

/** True for `<ctx>.db`. */
function isDb(node: ts.Node, ctx: string): node is ts.PropertyAccessExpression {
  return (
    ts.isPropertyAccessExpression(node) &&
    node.name.text === "db" &&
    ts.isIdentifier(node.expression) &&
    node.expression.text === ctx
  );
}

function enclosingFunction(node: ts.Node): ts.Node | undefined {
  let current = node.parent;
  while (current && !ts.isFunctionLike(current)) current = current.parent;
  return current;
}

/**
 * Rewrites the legacy capsule made of `files` (path -> source). Handlers anywhere are rewritten
 * first, so the schema (wherever `app({...})` is) gets every index their queries need.
 */
export function migrateCapsule(files: Record<string, string>): CodemodResult {
  const indexes: Record<string, Record<string, string[]>> = {};
  const mods = Object.entries(files).map(([file, text]) => new FileCodemod(file, text, indexes));
  const apps: Array<{ mod: FileCodemod; call: ts.CallExpression }> = [];
  for (const mod of mods) {
    const found = mod.legacyImport();
    if (!found) continue;
    mod.imports(found.declaration);
    if (found.app) for (const call of mod.appCalls(found.app)) apps.push({ mod, call });
  }
  for (const { mod, call } of apps) mod.handlers(call);
  for (const { mod, call } of apps) mod.schema(call);
  const result: CodemodResult = {
    files: mods.map((mod) => mod.result()),
    indexes,
    rewrites: mods.reduce((sum, mod) => sum + mod.rewrites, 0),
    unresolved: mods.flatMap((mod) => mod.unresolved),
    callers: mods.flatMap((mod) => mod.callers),
  };
  if (apps.length === 0)
    result.unresolved.push({
      file: Object.keys(files)[0] ?? "server/index.ts",
      line: 1,
      message: 'No legacy capsule found: nothing imports app from "platform/legacy".',
    });
  return result;
}
