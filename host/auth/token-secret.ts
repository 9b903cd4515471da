import { randomBytes } from "node:crypto";
import type { HostDatabase } from "../db/index.js";

/**
 * The secret identity tokens are signed with, one for every host on the database: read, or
 * created once. Two hosts starting at once on a new database create it under a lock and read it
 * again inside, so both sign with the first one written; each keeping one of its own would refuse
 * the other's tokens until restarted.
 */
export async function loadTokenSecret(db: HostDatabase): Promise<Buffer> {
  const secrets = db.records<{ hex: string }>("secrets");
  const secret =
    (await secrets.get("tokens")) ??
    (await db.exclusive("token-secret", async (fence) => {
      const stored = await secrets.get("tokens");
      if (stored) return stored;
      const created = { hex: randomBytes(32).toString("hex") };
      // Fenced: with the lock lost, another host may have written its own meanwhile.
      await secrets.put("tokens", created, fence);
      return created;
    }));
  return Buffer.from(secret.hex, "hex");
}
