import { randomBytes } from "node:crypto";
import { ClassicLevel } from "classic-level";
import { afterPrefix } from "./codec.js";
import { CursorCodec } from "./cursor.js";
import { DeploymentDatabase } from "./deployment.js";
import { deploymentPrefixes, hostKey } from "./keys.js";
import { RecordStore } from "./records.js";
import type { Level } from "./scan.js";

/**
 * The host's document database: one classic-level store holding every deployment, each behind its
 * own {@link DeploymentDatabase}. Knows nothing of HTTP or isolates.
 */
export class Database {
  private readonly deployments = new Map<string, Promise<DeploymentDatabase>>();

  private constructor(
    readonly level: Level,
    private readonly cursors: CursorCodec,
  ) {}

  /** Opens (creating if needed) the database at `location`. */
  static async open(location: string): Promise<Database> {
    const level: Level = new ClassicLevel<Buffer, string>(location, {
      keyEncoding: "buffer",
      valueEncoding: "utf8",
    });
    await level.open();
    const keyName = hostKey("cursorKey");
    let key = await level.get(keyName);
    if (!key) {
      key = randomBytes(32).toString("hex");
      await level.put(keyName, key);
    }
    return new Database(level, new CursorCodec(Buffer.from(key, "hex")));
  }

  /** The database of deployment `id`, loaded once and shared. */
  deployment(id: string): Promise<DeploymentDatabase> {
    let loading = this.deployments.get(id);
    if (!loading) {
      loading = new DeploymentDatabase(this.level, id, this.cursors).load();
      loading.catch(() => this.deployments.delete(id));
      this.deployments.set(id, loading);
    }
    return loading;
  }

  /** A namespace of host-wide JSON records. */
  records<T>(namespace: string): RecordStore<T> {
    return new RecordStore<T>(this.level, namespace);
  }

  /** Deletes every row, index entry and metadata record of a deployment. */
  async dropDeployment(id: string): Promise<void> {
    const deployment = await this.deployment(id);
    await deployment.lock.run(async () => {
      for (const prefix of deploymentPrefixes(id))
        await this.level.clear({ gte: prefix, lt: afterPrefix(prefix) });
    });
    this.deployments.delete(id);
  }

  /** Closes the store; open transactions fail afterwards. */
  async close(): Promise<void> {
    await this.level.close();
  }
}
