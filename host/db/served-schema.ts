import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { metaKey } from "./keys.js";
import type { KvOperation, KvStore } from "./kv/index.js";
import { SchemaReaders } from "./schema-readers.js";
import { type CompiledTable, compileSchema, emptySchema, type StoredSchema } from "./stored-schema.js";

/** The key of deployment `id`'s stored schema. */
export function schemaKey(id: string): Buffer {
  return metaKey(id, "schema");
}

/** The key of deployment `id`'s schema tag (see {@link schemaWrites}). */
export function schemaTagKey(id: string): Buffer {
  return metaKey(id, "schemaTag");
}

/**
 * The operations that store `schema` as deployment `id`'s, with a new tag: a random value that a
 * host sharing the store compares to learn whether the schema changed, reading a few bytes
 * instead of the schema (which may take megabytes) under every mutation's lock.
 */
export function schemaWrites(id: string, schema: StoredSchema): { operations: KvOperation[]; tag: string } {
  const tag = randomBytes(12).toString("base64url");
  return {
    operations: [
      { type: "put", key: schemaKey(id), value: JSON.stringify(schema) },
      { type: "put", key: schemaTagKey(id), value: tag },
    ],
    tag,
  };
}

/**
 * The schema one deployment serves: as stored, compiled, and the tag it was stored with (unknown
 * for a schema stored before tags existed, which is then compared whole). Each compiled
 * generation keeps count of the queries reading through it (see {@link SchemaReaders}).
 */
export class ServedSchema {
  private stored: StoredSchema = emptySchema();
  /** {@link stored} as its record holds it, to notice any change another host made. */
  private json = JSON.stringify(this.stored);
  private compiled = new Map<string, CompiledTable>();
  /** The tag {@link stored} was written with; undefined when not known. */
  tag: string | undefined;
  private readonly readers = new SchemaReaders<ReadonlyMap<string, CompiledTable>>();

  constructor(private readonly deployment: string) {}

  /** The keys {@link update} reads: the tag, and the schema when `whole` or its tag is not known. */
  keys(whole: boolean): Buffer[] {
    const keys = [schemaTagKey(this.deployment)];
    if (whole || this.tag === undefined) keys.push(schemaKey(this.deployment));
    return keys;
  }

  /**
   * Serves what the store holds, given the values of {@link keys} (the tag, and the schema when it
   * was among them). When only the tag was read and it is not the one served, the tag and schema
   * are read again together. False when a read of the schema finds none for a deployment that had
   * one: it was deleted.
   */
  async update(store: KvStore, values: Array<string | undefined>): Promise<boolean> {
    let [tag, json] = values;
    if (values.length < 2) {
      if (tag !== undefined && tag === this.tag) return true;
      [tag, json] = await store.getMany(this.keys(true));
    }
    if (json) this.adoptRecord(json, tag);
    return json !== undefined || this.stored.hash === "";
  }

  /** Serves `stored` from now on; `tag`: the one written with it, when known. */
  adopt(stored: StoredSchema, tag: string | undefined): void {
    this.stored = stored;
    this.json = JSON.stringify(stored);
    this.compiled = compileSchema(this.deployment, stored);
    this.tag = tag;
  }

  /**
   * Serves the stored record `json` (with `tag`) unless it is the one served already: an import
   * may store the same schema under other index storage ids, so all of it is compared.
   */
  adoptRecord(json: string, tag: string | undefined): void {
    if (json !== this.json) this.adopt(JSON.parse(json) as StoredSchema, tag);
    else this.tag = tag;
  }

  get schema(): StoredSchema {
    return this.stored;
  }

  get tables(): ReadonlyMap<string, CompiledTable> {
    return this.compiled;
  }

  /** A query began reading through `tables`. */
  enter(tables: ReadonlyMap<string, CompiledTable>): void {
    this.readers.enter(tables);
  }

  /** A query reading through `tables` ended. */
  leave(tables: ReadonlyMap<string, CompiledTable>): void {
    this.readers.leave(tables);
  }

  /**
   * Resolves once the queries that began on the schema served as `tables` have ended (within a
   * handler's wall time): a migration clears the indexes it dropped after that.
   */
  readersEnded(tables: ReadonlyMap<string, CompiledTable>): Promise<void> {
    return this.readers.ended(tables, LIMITS.handlerWallMs);
  }

  /** The schema served as `tables` is gone (its dropped indexes are being cleared). */
  retire(tables: ReadonlyMap<string, CompiledTable>): void {
    this.readers.retire(tables);
  }

  isRetired(tables: ReadonlyMap<string, CompiledTable>): boolean {
    return this.readers.isRetired(tables);
  }
}
