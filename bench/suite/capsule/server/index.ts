import { boolean, capsule, type Id, id, type PaginationOptions, string, table } from "platform/server";

/** bench/suite's workload: todo items in lists. Every query reads through an index. */
export default capsule({
  schema: {
    lists: table({ name: string() }),
    items: table({ list: id("lists"), text: string(), done: boolean() }).index("by_list", ["list"]),
  },
  queries: {
    get: async (ctx, args: { id: Id<"items"> }) => ctx.db.items.get(args.id),
    list: async (ctx, args: { list: Id<"lists"> }) =>
      ctx.db.items
        .withIndex("by_list", (q) => q.eq("list", args.list))
        .order("desc")
        .take(50),
    page: async (ctx, args: { list: Id<"lists">; paginationOpts: PaginationOptions }) =>
      ctx.db.items.withIndex("by_list", (q) => q.eq("list", args.list)).paginate(args.paginationOpts),
    count: async (ctx, args: { list: Id<"lists"> }) =>
      ctx.db.items.withIndex("by_list", (q) => q.eq("list", args.list)).count(),
  },
  mutations: {
    insert: async (ctx, args: { list: Id<"lists">; text: string }) =>
      ctx.db.items.insert({ list: args.list, text: args.text, done: false }),
    seed: async (ctx, args: { lists: number; perList: number }) => {
      const lists: string[] = [];
      const items: string[] = [];
      for (let l = 0; l < args.lists; l++) {
        const list = await ctx.db.lists.insert({ name: `list ${l}` });
        lists.push(list);
        for (let i = 0; i < args.perList; i++)
          items.push(
            await ctx.db.items.insert({
              list,
              text: `item ${i} of list ${l}, lorem ipsum`,
              done: i % 3 === 0,
            }),
          );
      }
      return { lists, items };
    },
  },
});
