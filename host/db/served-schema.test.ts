/** The schema a deployment serves, and how a host learns by its tag that another one changed it. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { ServedSchema, schemaKey, schemaTagKey, schemaWrites } from "./served-schema.js";
import { emptySchema, type StoredSchema } from "./stored-schema.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

const schema = (hash: string): StoredSchema => Object.assign(emptySchema(), { hash });

describe("a served schema", () => {
  it("answers at once while the tag read is its own, and reads the schema when it changed", async () => {
    const served = new ServedSchema("d");
    const first = schemaWrites("d", schema("one"));
    await env.db.store.batch(first.operations);
    served.adopt(schema("one"), first.tag);
    expect(served.keys(false)).toEqual([schemaTagKey("d")]);
    expect(await served.update(env.db.store, [first.tag])).toBe(true);
    const second = schemaWrites("d", schema("two"));
    await env.db.store.batch(second.operations);
    expect(await served.update(env.db.store, [second.tag])).toBe(true);
    expect([served.schema.hash, served.tag]).toEqual(["two", second.tag]);
  });

  it("reads the schema before calling a deployment deleted, even when its tag became unknown meanwhile", async () => {
    // The lock's keys were chosen while the tag was known; a broadcast then adopted a record
    // without a tag (written by a host of an older version). The deployment is not deleted.
    const served = new ServedSchema("d");
    const first = schemaWrites("d", schema("one"));
    served.adopt(schema("one"), first.tag);
    const untagged: StoredSchema = schema("two");
    await env.db.store.batch([{ type: "put", key: schemaKey("d"), value: JSON.stringify(untagged) }]);
    served.adoptRecord(JSON.stringify(untagged), undefined);
    expect(await served.update(env.db.store, [undefined])).toBe(true);
    expect(served.schema.hash).toBe("two");
    // Deleted: no tag and no schema.
    await env.db.store.batch([{ type: "del", key: schemaKey("d") }]);
    expect(await served.update(env.db.store, [undefined])).toBe(false);
  });
});
