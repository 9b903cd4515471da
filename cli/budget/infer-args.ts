/**
 * Arguments for `platform budget` read from the handlers' declared argument types, so a capsule
 * whose handlers take arguments can be measured without a `budget.json`. The TypeScript checker
 * reads `server/index.ts` as the author's editor does; a type it cannot turn into a value leaves
 * the handler to budget.json (or `{}`).
 */
import { dirname } from "node:path";
import ts from "typescript";
import { entryUnlessInstalled, ownEntry } from "../bundle.js";

/** How deep nested object and tuple types are followed before giving up. */
const MAX_DEPTH = 6;

/** A value for an argument type that has no better one: numbers are small but non-trivial. */
const SAMPLE_NUMBER = 10;

/** The marker a type has no value here (a function, a symbol, an `any` the author left open). */
const NONE = Symbol("none");
type Sample = unknown | typeof NONE;

/**
 * Where `platform/<module>` types come from for the checker: the capsule's own installed package,
 * else this package's source (a checkout) or its declaration files (an installed CLI).
 */
function platformPaths(capsuleDir: string): Record<string, string[]> {
  const paths: Record<string, string[]> = {};
  if (entryUnlessInstalled(capsuleDir, "server") === undefined) return paths;
  for (const module of ["server", "legacy"] as const) {
    const entry = ownEntry(module);
    paths[`platform/${module}`] = [entry.endsWith(".js") ? entry.replace(/\.js$/, ".d.ts") : entry];
  }
  return paths;
}

/** Recognises the branded strings of `platform/server`: `Id<"table">` and `UserId`. */
function brandedString(type: ts.Type, checker: ts.TypeChecker): Sample {
  const table = type.getProperty("__tableName");
  if (table) {
    const tableType = checker.getTypeOfSymbol(table);
    return tableType.isStringLiteral() ? `$id:${tableType.value}` : NONE;
  }
  if (type.getProperty("__userId")) return "$user";
  return NONE;
}

/**
 * A JSON value of `type`: literals as written, `null` when a union allows it (an empty cursor, an
 * unset option), `Id<"t">` as `"$id:t"` and `UserId` as `"$user"` (filled in per size like
 * budget.json's placeholders), strings as their property's name, numbers {@link SAMPLE_NUMBER},
 * booleans false, arrays empty, objects with their required properties only.
 */
function sample(type: ts.Type, checker: ts.TypeChecker, name: string, depth: number): Sample {
  if (depth > MAX_DEPTH) return NONE;
  const flags = type.flags;
  if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.Never)) return NONE;
  if (flags & ts.TypeFlags.Null) return null;
  if (type.isStringLiteral() || type.isNumberLiteral()) return type.value;
  if (flags & ts.TypeFlags.BooleanLiteral) return checker.typeToString(type) === "true";
  if (flags & ts.TypeFlags.String) return name;
  if (flags & ts.TypeFlags.Number) return SAMPLE_NUMBER;
  if (flags & ts.TypeFlags.Boolean) return false;
  if (type.isUnion()) {
    const members = type.types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)));
    if (members.some((t) => t.flags & ts.TypeFlags.Null)) return null;
    if (members.every((t) => t.flags & ts.TypeFlags.BooleanLiteral)) return false;
    for (const member of members) {
      const value = sample(member, checker, name, depth + 1);
      if (value !== NONE) return value;
    }
    return NONE;
  }
  if (type.isIntersection()) {
    const branded = brandedString(type, checker);
    if (branded !== NONE) return branded;
    return NONE;
  }
  if (checker.isArrayType(type)) return [];
  if (checker.isTupleType(type)) {
    const elements = checker
      .getTypeArguments(type as ts.TypeReference)
      .map((t, i) => sample(t, checker, `${name}${i}`, depth + 1));
    return elements.includes(NONE) ? NONE : elements;
  }
  if (flags & ts.TypeFlags.Object) {
    if (type.getCallSignatures().length > 0 || type.getConstructSignatures().length > 0) return NONE;
    const out: Record<string, unknown> = {};
    for (const property of type.getProperties()) {
      if (property.flags & ts.SymbolFlags.Optional) continue;
      const value = sample(checker.getTypeOfSymbol(property), checker, property.name, depth + 1);
      if (value === NONE) return NONE;
      out[property.name] = value;
    }
    return out;
  }
  return NONE;
}

/** The handler functions of one member (`queries` or `mutations`) of the capsule's definition. */
function handlersOf(definition: ts.Type, member: string, checker: ts.TypeChecker): ts.Symbol[] {
  const map = definition.getProperty(member);
  // `queries?: Q` reads as `Q | undefined`, whose union has no properties of its own.
  return map ? checker.getNonNullableType(checker.getTypeOfSymbol(map)).getProperties() : [];
}

/**
 * The arguments each query and mutation of the capsule at `entry` (its `server/index.ts`) can be
 * called with, by handler name, as far as its declared argument type tells: `{}` for a handler
 * that takes none, a value with budget.json's placeholders otherwise. Handlers whose type says
 * nothing usable (`any`, functions) are left out, as is everything when the file cannot be read
 * as a `capsule({...})` (a legacy capsule, a syntax error the bundler will report).
 */
export function inferArgs(entry: string): Map<string, unknown> {
  const inferred = new Map<string, unknown>();
  const capsuleDir = dirname(dirname(entry));
  const program = ts.createProgram([entry], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    types: [],
    lib: ["lib.es2024.d.ts"],
    paths: platformPaths(capsuleDir),
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  const module = source && checker.getSymbolAtLocation(source);
  const exported = module && checker.getExportsOfModule(module).find((s) => s.name === "default");
  if (!source || !exported) return inferred;
  const capsuleType = checker.getTypeOfSymbolAtLocation(exported, source);
  const definitionSymbol = capsuleType.getProperty("definition");
  if (!definitionSymbol) return inferred;
  const definition = checker.getTypeOfSymbol(definitionSymbol);
  for (const member of ["queries", "mutations"]) {
    for (const handler of handlersOf(definition, member, checker)) {
      const signature = checker.getNonNullableType(checker.getTypeOfSymbol(handler)).getCallSignatures()[0];
      if (!signature) continue;
      const argsParameter = signature.getParameters()[1];
      if (!argsParameter) {
        inferred.set(handler.name, {});
        continue;
      }
      const value = sample(checker.getTypeOfSymbol(argsParameter), checker, "args", 0);
      if (value !== NONE) inferred.set(handler.name, value);
    }
  }
  return inferred;
}
