/**
 * How `platform budget` grows a capsule's tables to each size: rows generated from the schema
 * (seed.ts makes each value), or the capsule's own seed mutation called until its tables grew.
 */
import { type PlatformHost, type Transaction, UNLIMITED_BUDGET } from "../../host/index.js";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";
import type { BudgetScenario } from "./scenario.js";
import { generateValue, seedOrder } from "./seed.js";

/** The host's deployments, through which the seed mutation is called. */
export type HostDeployments = PlatformHost["deployments"];
/** The throw-away deployment's database. */
export type DeploymentStore = Awaited<ReturnType<PlatformHost["database"]["deployment"]>>;

/** Rows inserted per transaction. */
const CHUNK = 1000;
/** The most rows one call of the seed mutation is asked for. */
const SEED_CALL_MAX = 500;

/** Tops every table up to `size` rows with rows generated from the schema (and budget.json hints). */
export async function seedFromSchema(
  database: DeploymentStore,
  schema: SchemaSpec,
  scenario: BudgetScenario,
  size: number,
  count: (table: string) => Promise<number>,
  ids: Map<string, string[]>,
): Promise<void> {
  const idsOf = (table: string) => ids.get(table) ?? [];
  for (const table of seedOrder(schema)) {
    const spec = schema.tables[table];
    if (!spec) continue;
    let have = await count(table);
    while (have < size) {
      const n = Math.min(CHUNK, size - have);
      const start = have;
      const made = await database.mutate(
        async (tx: Transaction) => {
          const out: string[] = [];
          for (let i = start; i < start + n; i++) {
            const row: Record<string, unknown> = {};
            for (const [name, field] of Object.entries(spec.fields)) {
              const value = generateValue(table, name, field, i, scenario.rows[table]?.[name], idsOf);
              if (value !== undefined) row[name] = value;
            }
            out.push(await tx.insert(table, row));
          }
          return out;
        },
        { budget: UNLIMITED_BUDGET, handler: "budget.seed" },
      );
      const list = ids.get(table) ?? [];
      list.push(...made.value);
      ids.set(table, list);
      have += n;
    }
  }
}

/**
 * Tops tables up to `size` rows by calling the capsule's own seed mutation with `{ count }`
 * (at most 500 per call); the tables it seeds are the ones its calls make grow.
 */
export async function seedWithMutation(
  deployments: HostDeployments,
  deploymentId: string,
  mutation: string,
  size: number,
  schema: SchemaSpec,
  count: (table: string) => Promise<number>,
  identity: BridgeIdentity | null,
  seeded: Set<string>,
): Promise<void> {
  const tables = Object.keys(schema.tables);
  const counts = async () =>
    new Map(await Promise.all(tables.map(async (t) => [t, await count(t)] as const)));
  let before = await counts();
  const have = () => Math.min(...[...seeded].map((t) => before.get(t) ?? 0));
  while (seeded.size === 0 || have() < size) {
    const n = Math.min(SEED_CALL_MAX, seeded.size === 0 ? size : size - have());
    await deployments.call(deploymentId, {
      kind: "mutation",
      name: mutation,
      argsJson: JSON.stringify({ count: n }),
      identity,
    });
    const after = await counts();
    const grew = tables.filter((t) => (after.get(t) ?? 0) > (before.get(t) ?? 0));
    if (grew.length === 0)
      throw new Error(
        `The seed mutation ${mutation} added no rows; it should add { count } rows to each table it seeds.`,
      );
    for (const t of grew) seeded.add(t);
    before = after;
  }
}
