import { describe, expect, it } from "vitest";
import { migrateCapsule } from "./codemod.js";

const legacy = (
  body: string,
  schema = "items: { name: string(), group: number() }",
) => `import { app, number, string } from "platform/legacy";
// a comment the codemod keeps
export default app({
  schema: { ${schema} },
  ${body}
});
`;

function run(source: string, file = "server/index.ts") {
  return migrateCapsule({ [file]: source });
}

describe("platform migrate's codemod", () => {
  it("rewrites imports, handlers, chains and the schema, keeping everything else", () => {
    const result = run(
      legacy(`queries: {
    grouped(ctx, args: { group: number }) {
      return ctx.db.items.where("group", args.group).orderBy("name").all(); // trailing note
    },
    count: (ctx) => ctx.db.items.all().length,
  },`),
    );
    const text = result.files[0]?.text ?? "";
    expect(text).toContain('import { capsule, number, string, table } from "platform/server";');
    expect(text).toContain("// a comment the codemod keeps");
    expect(text).toContain(
      'items: table({ name: string(), group: number() }).index("by_group_name", ["group", "name"])',
    );
    expect(text).toContain(
      'return await ctx.db.items.withIndex("by_group_name", (q) => q.eq("group", args.group)).collect(); // trailing note',
    );
    expect(text).toContain("count: async (ctx) => (await ctx.db.items.collect()).length,");
    expect(result.unresolved).toEqual([]);
  });

  it("rewrites database calls nested in other calls' arguments", () => {
    const result = run(
      legacy(
        `mutations: {
    copy(ctx, id: string) {
      return ctx.db.items.insert({ name: ctx.db.items.get(id).name, group: 1 });
    },
  },`,
      ),
    );
    expect(result.files[0]?.text).toContain(
      "return await ctx.db.items.get(await ctx.db.items.insert({ name: (await ctx.db.items.get(id)).name, group: 1 }));",
    );
    expect(result.callers).toEqual([
      expect.objectContaining({ line: 6, message: expect.stringContaining("now takes one object { id }") }),
    ]);
  });

  it("lists by file and line what it cannot rewrite", () => {
    const result = run(
      legacy(`queries: {
    dynamic(ctx, args: { table: string }) {
      return ctx.db[args.table].all();
    },
    stored(ctx) {
      const q = ctx.db.items.where("group", 1);
      return q.all();
    },
    nested(ctx, args: { ids: string[] }) {
      return args.ids.map((id) => ctx.db.items.get(id));
    },
    backwards(ctx) {
      return ctx.db.items.orderBy("name").where("group", 1).all();
    },
    list,
  },`),
      "server/app.ts",
    );
    expect(result.unresolved.map((n) => [n.file, n.line, n.message.split(":")[0]])).toEqual([
      ["server/app.ts", 7, "ctx.db is indexed with a computed table name; rewrite this call by hand."],
      [
        "server/app.ts",
        10,
        "ctx.db is used in a way the codemod does not follow (a stored query or a helper); rewrite it by hand.",
      ],
      ["server/app.ts", 14, "A database call inside a nested function"],
      [
        "server/app.ts",
        17,
        "This items query chain (orderBy.where.all) has no v1 equivalent the codemod knows; rewrite it by hand.",
      ],
      [
        "server/app.ts",
        19,
        "Handler list is not defined inline; make it async and await its database calls by hand.",
      ],
    ]);
  });

  it("says so when there is no legacy capsule", () => {
    const result = run(
      'import { capsule } from "platform/server";\nexport default capsule({ schema: {} });\n',
    );
    expect(result.unresolved[0]?.message).toContain("No legacy capsule found");
    expect(result.files[0]?.changed).toBe(false);
  });
});
