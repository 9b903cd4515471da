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

/** A replacement of the source text in [start, end). */
interface Edit {
  start: number;
  end: number;
  text: string;
}

/** Applies the edits inside [start, end) to the source text; outer edits win over inner ones. */
function applyEdits(text: string, edits: Edit[], start: number, end: number): string {
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

function scriptKind(file: string): ts.ScriptKind {
  if (file.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (file.endsWith(".jsx")) return ts.ScriptKind.JSX;
  if (file.endsWith(".js") || file.endsWith(".mjs")) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

/**
 * One source file under rewrite: its syntax tree, the text edits made so far and the notes for
 * humans. Edits replace spans of the original text, so everything not touched keeps its
 * formatting and comments; {@link EditedSource.render} shows a node with the edits inside it.
 */
export class EditedSource {
  readonly edits: Edit[] = [];
  readonly unresolved: MigrationNote[] = [];
  readonly callers: MigrationNote[] = [];
  /** Handlers made async and database calls awaited. */
  rewrites = 0;
  readonly source: ts.SourceFile;

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    this.source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  }

  /** The 1-based line a node starts on. */
  line(node: ts.Node): number {
    return this.source.getLineAndCharacterOfPosition(node.getStart(this.source)).line + 1;
  }

  /** Records something at `node` the author must finish by hand. */
  note(node: ts.Node, message: string): void {
    this.unresolved.push({ file: this.file, line: this.line(node), message });
  }

  /** The text of `node` with the edits made inside it so far. */
  render(node: ts.Node): string {
    return applyEdits(this.text, this.edits, node.getStart(this.source), node.getEnd());
  }

  /** Replaces all of `node` by `text`. */
  replace(node: ts.Node, text: string): void {
    this.replaceRange(node, node, text);
  }

  /** Replaces the text from the start of `from` to the end of `to` by `text`. */
  replaceRange(from: ts.Node, to: ts.Node, text: string): void {
    this.edits.push({ start: from.getStart(this.source), end: to.getEnd(), text });
  }

  /** Inserts `text` where `node` starts. */
  insertBefore(node: ts.Node, text: string): void {
    const at = node.getStart(this.source);
    this.edits.push({ start: at, end: at, text });
  }

  /** The whole file with every edit applied. */
  result(): FileRewrite {
    const text = applyEdits(this.text, this.edits, 0, this.text.length);
    return { file: this.file, text, changed: text !== this.text };
  }
}

/** The initializer of member `name` of an object literal, when it is a plain `name: value`. */
export function property(object: ts.ObjectLiteralExpression, name: string): ts.Expression | undefined {
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
export function isDb(node: ts.Node, ctx: string): node is ts.PropertyAccessExpression {
  return (
    ts.isPropertyAccessExpression(node) &&
    node.name.text === "db" &&
    ts.isIdentifier(node.expression) &&
    node.expression.text === ctx
  );
}
