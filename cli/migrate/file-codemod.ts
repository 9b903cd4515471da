/**
 * The rewrite of one file of a legacy capsule: its `platform/legacy` import, the handlers of its
 * `app({...})` calls (made async, database calls awaited through {@link rewriteChain}, positional
 * mutation arguments turned into one object) and its schema (tables wrapped in `table(...)` with
 * the indexes every file's queries need).
 */
import ts from "typescript";
import { type ChainContext, rewriteChain, TERMINALS } from "./query-chain.js";
import { EditedSource, isDb, property } from "./source-edits.js";

/** One file of a legacy capsule under rewrite (see the file comment for what is rewritten). */
export class FileCodemod extends EditedSource {
  private readonly chains: ChainContext;

  constructor(file: string, text: string, indexes: Record<string, Record<string, string[]>>) {
    super(file, text);
    this.chains = { file: this, consumed: new Set(), indexes };
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
      if (this.chains.consumed.has(node)) continue;
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
      this.insertBefore(fn, "async ");
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
    this.replaceRange(first, last, `{ ${names.join(", ")} }${type}`);
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
      if (TERMINALS.has(terminal) && !this.chains.consumed.has(node))
        rewriteChain(this.chains, node, handler, ctx);
    }
    if (isDb(node, ctx)) seen.push(node);
  }

  /** Rewrites the schema of an `app({...})` call to `table({...})` with the indexes needed. */
  schema(call: ts.CallExpression): void {
    const definition = call.arguments[0];
    if (!definition || !ts.isObjectLiteralExpression(definition)) return;
    this.replace(call.expression, "capsule");
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
      const wanted = this.chains.indexes[tableName] ?? {};
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
}
