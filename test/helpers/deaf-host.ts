/**
 * A host of a shared database that hears nothing of one deployment, as when another host's
 * announcements about it are lost or still on their way: what the stale-incarnation attacks
 * (test/stale-incarnation*.test.ts) run on.
 */
import type { HostMessage } from "../../host/db/index.js";
import type { TestHost } from "./host.js";

/**
 * Makes host `host` hear nothing of deployment `id` (its announcements of records, schemas and
 * commits, and the stamps' checks, which would read its record again within a period) until the
 * returned function is called: as when the announcements are lost, or still on their way.
 */
export function deafTo(host: TestHost, id: string): () => void {
  const database = host.database as unknown as { receive(message: HostMessage): Promise<void> };
  const receive = database.receive;
  database.receive = async function (this: unknown, message) {
    const about = message.type === "deployment" ? message.id : "deployment" in message && message.deployment;
    if (about !== id) await receive.call(this, message);
  };
  const registry = (host.deployments as unknown as { registry: { checkStamps(): Promise<void> } }).registry;
  const check = registry.checkStamps;
  registry.checkStamps = async () => {};
  return () => {
    database.receive = receive;
    registry.checkStamps = check;
  };
}
