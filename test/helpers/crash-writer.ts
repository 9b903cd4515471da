/**
 * Child process for the crash test: commits transactions forever (three rows plus a counter update
 * each) and prints `ack <n>` after each commit returns. The parent kills it with SIGKILL.
 */
import { HostDatabase } from "../../host/db/index.js";
import { CRASH_SCHEMA } from "./crash-schema.js";

const db = await HostDatabase.open(process.argv[2] as string);
const deployment = await db.deployment("crash");
await deployment.migrate(CRASH_SCHEMA);
let n = (
  await deployment.query(async (tx) => {
    const out = await tx.query(
      { table: "counter", index: "by_creation", range: [], order: "asc" },
      { kind: "first" },
    );
    return out.kind === "row" && out.row ? (JSON.parse(out.row) as { value: number }).value : 0;
  })
).value;
for (;;) {
  n++;
  const i = n;
  await deployment.mutate(async (tx) => {
    for (const tag of ["a", "b", "c"])
      await tx.insert("items", { n: i, tag, pad: "x".repeat(200 + ((i * 37) % 500)) });
    const counter = await tx.query(
      { table: "counter", index: "by_creation", range: [], order: "asc" },
      { kind: "first" },
    );
    if (counter.kind === "row" && counter.row)
      await tx.update("counter", (JSON.parse(counter.row) as { id: string }).id, { value: i });
    else await tx.insert("counter", { value: i });
  });
  process.stdout.write(`ack ${i}\n`);
}
