/**
 * Type tests: compiled by `npm run typecheck`, never run. Each `@ts-expect-error` proves that a
 * mistake (a typo in a table, field or index name, a wrong value type) does not compile.
 */
import {
  boolean,
  capsule,
  type Doc,
  endpoint,
  type Id,
  type InsertRow,
  id,
  json,
  type MutationCtx,
  number,
  type Patch,
  type QueryCtx,
  string,
  table,
  text,
  type UserId,
  userId,
} from "./index.js";

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assert<_T extends true>(): void {}

const schema = {
  lists: table({ name: string() }),
  todos: table({
    text: string(),
    done: boolean().default(false),
    priority: number().optional(),
    rank: number().optional().default(1),
    rank2: number().default(1).optional(),
    owner: userId(),
    list: id("lists"),
  })
    .index("by_owner", ["owner", "done"])
    .index("by_list", ["list"]),
};
type S = typeof schema;

// Row type: defaults and optional+default give plain types; optional alone may be absent.
assert<
  Equals<
    Doc<S, "todos">,
    {
      id: Id<"todos">;
      createdAt: number;
      text: string;
      done: boolean;
      rank: number;
      rank2: number;
      owner: UserId;
      list: Id<"lists">;
      priority?: number;
    }
  >
>();

// Insert: required fields must be given; defaulted and optional ones may be omitted or null.
assert<Equals<InsertRow<S["todos"]["fields"]>["text"], string>>();
assert<Equals<InsertRow<S["todos"]["fields"]>["done"], boolean | null | undefined>>();
assert<Equals<Patch<S["todos"]["fields"]>["priority"], number | null | undefined>>();
assert<Equals<Patch<S["todos"]["fields"]>["text"], string | undefined>>();

async function reads(ctx: QueryCtx<S>, owner: UserId, listId: Id<"lists">) {
  const mine = await ctx.db.todos
    .withIndex("by_owner", (q) => q.eq("owner", owner).eq("done", false))
    .collect();
  assert<Equals<typeof mine, Doc<S, "todos">[]>>();
  await ctx.db.todos.withIndex("by_owner", (q) =>
    q.eq("owner", owner).eq("done", true).gt("createdAt", 0).lt("createdAt", 5),
  );
  await ctx.db.todos
    .withIndex("by_list", (q) => q.eq("list", listId))
    .order("desc")
    .first();
  await ctx.db.todos.withIndex("by_creation", (q) => q.gte("createdAt", 0)).count();
  await ctx.db.todos.take(10);
  const page = await ctx.db.lists.paginate({ cursor: null, numItems: 10 });
  assert<Equals<typeof page.page, Doc<S, "lists">[]>>();
  const list = await ctx.db.lists.get(listId);
  assert<Equals<typeof list, Doc<S, "lists"> | null>>();

  // @ts-expect-error typo in a table name
  ctx.db.todo.take(1);
  // @ts-expect-error typo in an index name
  ctx.db.todos.withIndex("by_ownr");
  // @ts-expect-error index fields must be compared in order
  ctx.db.todos.withIndex("by_owner", (q) => q.eq("done", true));
  // @ts-expect-error a field that is not in the index
  ctx.db.todos.withIndex("by_owner", (q) => q.eq("owner", owner).eq("text", "x"));
  // @ts-expect-error wrong value type for the field
  ctx.db.todos.withIndex("by_owner", (q) => q.eq("owner", owner).eq("done", "yes"));
  // @ts-expect-error eq(null) only on optional fields
  ctx.db.todos.withIndex("by_owner", (q) => q.eq("owner", null));
  // @ts-expect-error an id of another table
  ctx.db.lists.get("x" as Id<"todos">);
  // @ts-expect-error queries cannot write
  ctx.db.todos.insert({ text: "x", owner, list: listId });
}

async function writes(ctx: MutationCtx<S>, owner: UserId, listId: Id<"lists">) {
  const newId = await ctx.db.todos.insert({ text: "x", owner, list: listId, priority: null });
  assert<Equals<typeof newId, Id<"todos">>>();
  await ctx.db.todos.update(newId, { done: true, priority: null });
  await ctx.db.todos.delete(newId);
  // @ts-expect-error a required field is missing
  await ctx.db.todos.insert({ owner, list: listId });
  // @ts-expect-error typo in a field name
  await ctx.db.todos.insert({ text: "x", owner, list: listId, dne: true });
  // @ts-expect-error required fields cannot be cleared
  await ctx.db.todos.update(newId, { text: null });
}

// @ts-expect-error index over a field that does not exist
table({ a: string() }).index("by_b", ["b"]);

// Handlers in capsule() get ctx typed from the schema without annotations.
capsule({
  schema,
  queries: {
    list: async (ctx) => {
      // @ts-expect-error typo in a table name inside a handler
      await ctx.db.todoz.take(1);
      return ctx.db.todos.take(10);
    },
  },
  mutations: {
    add: async (ctx, args: { text: string; list: Id<"lists"> }) => {
      const me = ctx.auth.requireIdentity();
      return ctx.db.todos.insert({ text: args.text, owner: me.userId, list: args.list });
    },
  },
});

export { reads, writes };

// Endpoints do not widen the schema type: handlers stay precisely typed.
capsule({
  schema,
  queries: {
    typed: async (ctx) => {
      // @ts-expect-error typo in a table name next to an endpoint
      await ctx.db.todoz.take(1);
      return ctx.db.lists.take(1);
    },
  },
  endpoints: {
    hello: endpoint({ method: "GET", path: "/hello", readOnly: true }, async () => text("hi")),
    typed: endpoint<typeof schema, true>({ method: "GET", path: "/lists", readOnly: true }, async (ctx) =>
      json(await ctx.db.lists.take(5)),
    ),
  },
});
