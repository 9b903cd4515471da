/**
 * The host's own locks on PostgreSQL, lost midway (two hosts' stores on one fresh table of a
 * private server): a sign-in code's check, a developer token's rotation, a bundle's removal and a
 * download's script-check mark each read under a lock across hosts and write what they decided.
 * The server ends the lock's backend between the two, and the other host takes the lock and acts.
 * The first host's write must be refused (`unavailable`, nothing written): else a code signs in
 * twice, a rotation answers a dead token, a bundle in use is removed, a deleted object's record
 * comes back, a new database's token secret or cursor key is replaced after the other host began
 * to use it (every token it signed, every cursor it sealed, no longer verifying), and a failed
 * deploy's discard removes the web client files the other host's deploy just staged.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { OWNER_DELETE } from "../host/access/index.js";
import { Developers, EmailCodes, hashSecret, type UnsentCode } from "../host/auth/index.js";
import { loadTokenSecret } from "../host/auth/token-secret.js";
import { storedCursorKey } from "../host/db/cursor-key.js";
import { HostDatabase, PostgresKv, type RecordStore } from "../host/db/index.js";
import { LOCK_LOST } from "../host/db/kv/index.js";
import { ArtifactStore } from "../host/deployments/artifacts.js";
import { ClientFileStore } from "../host/deployments/client-files.js";
import { MemoryBlobStore } from "../host/storage/memory-blob-store.js";
import type { ObjectRecord, Visibility } from "../host/storage/object-records.js";
import { ObjectService } from "../host/storage/objects.js";
import { endLockBackend, freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL host lock fence tests");

const lost = { code: "unavailable", cause: LOCK_LOST };

/** Two hosts' databases on one fresh table: runs `work` with both and the table. */
async function onTwoHosts(work: (a: HostDatabase, b: HostDatabase, table: string) => Promise<void>) {
  const table = freshTable();
  const a = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
  const b = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
  try {
    await work(a, b, table);
  } finally {
    await a.close();
    await b.close();
  }
}

/**
 * Makes `owner`'s record store `field` run `meanwhile` once, after its `nth` next read of `method`
 * answered (the first by default): the moment between a locked read and the write it decides.
 */
function afterNextRead<T>(
  owner: object,
  field: string,
  method: "get" | "someInPrefix",
  meanwhile: () => Promise<void>,
  nth = 1,
) {
  const store = (owner as Record<string, RecordStore<T>>)[field] as RecordStore<T>;
  const real = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
  let reads = 0;
  (store as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    const answer = await real(...args);
    if (++reads === nth) await meanwhile();
    return answer;
  };
}

describe.skipIf(!postgresInstalled)("the host's locks, lost midway", () => {
  it("a sign-in code checked under a lost lock is refused: the code signs in once, on the other host", () =>
    onTwoHosts(async (a, b, table) => {
      const sent: UnsentCode[] = [];
      const onA = new EmailCodes(a, { unsent: (code) => sent.push(code) });
      const onB = new EmailCodes(b, { unsent: () => {} });
      const request = await onA.start("app", "ada@example.com", () => 0);
      if (!("attempt" in request)) throw new Error("No code was sent.");
      const code = sent[0]?.code as string;
      afterNextRead(onA, "codes", "get", async () => {
        await endLockBackend(server, table, "email-codes:app");
        await onB.verify("app", "ada@example.com", code, request.attempt);
      });
      await expect(onA.verify("app", "ada@example.com", code, request.attempt)).rejects.toMatchObject(lost);
      // B's sign-in spent it: nothing of A's landed over that.
      await expect(onA.verify("app", "ada@example.com", code, request.attempt)).rejects.toMatchObject({
        code: "unauthorized",
      });
    }));

  it("a token rotation under a lost lock is refused: the other host's rotation answered the one live token", () =>
    onTwoHosts(async (a, b, table) => {
      const { developer, token } = await new Developers(a).create({ name: "Ada" });
      const onA = new Developers(a);
      const onB = new Developers(b);
      let fromB: string | undefined;
      afterNextRead(onA, "byId", "get", async () => {
        await endLockBackend(server, table, `developer-token:${developer.id}`);
        fromB = await onB.rotateToken(developer.id, hashSecret(token));
      });
      await expect(onA.rotateToken(developer.id, hashSecret(token))).rejects.toMatchObject(lost);
      expect(fromB).toBeDefined();
      expect((await onA.authenticate(fromB as string))?.id).toBe(developer.id);
      expect(await onA.authenticate(token)).toBeUndefined();
    }));

  it("a bundle's removal under a lost lock is refused: the other host's deploy keeps it", () =>
    onTwoHosts(async (a, b, table) => {
      const artifact = {
        hash: "h1",
        code: "export default 1;",
        apiVersion: 1,
        size: 17,
        createdAt: Date.now(),
      };
      const onA = new ArtifactStore(a);
      const onB = new ArtifactStore(b);
      await onA.add(artifact, "first");
      // A abandons the first deployment's use; B adds a second's once A found none left.
      afterNextRead(onA, "uses", "someInPrefix", async () => {
        await endLockBackend(server, table, "artifacts");
        await onB.add(artifact, "second");
      });
      await expect(onA.abandon("first", "h1")).rejects.toMatchObject(lost);
      expect(await onB.code("h1")).toBe(artifact.code);
      expect(await new ArtifactStore(a).code("h1")).toBe(artifact.code);
    }));
  it("a download's script-check mark under a lost quota lock is refused: an object deleted on the other host stays deleted", () =>
    onTwoHosts(async (a, b, table) => {
      const owner = async () => ({ quotaOwner: "dev-1", incarnation: null });
      const onA = new ObjectService(a, new MemoryBlobStore(), owner);
      const onB = new ObjectService(b, new MemoryBlobStore(), owner);
      const stored = await onA.upload({
        deployment: "d",
        quotaOwner: "dev-1",
        incarnation: null,
        visibility: "public",
        contentType: "image/svg+xml",
        bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>'),
        uploaderId: "user:1",
        uploaderEmail: null,
      });
      // Stored before its record kept the rules: a download checks it again, then marks it.
      const records = a.records<ObjectRecord>("objects");
      const { markupRules: _kept, ...older } = stored;
      await records.put(`d/${stored.key}`, older);
      afterNextRead(onA, "records", "get", async () => {
        await endLockBackend(server, table, "storage-quota:dev-1");
        const [visibility, id] = stored.key.split("/") as [Visibility, string];
        expect(await onB.remove({ id: "d", incarnation: null }, visibility, id, OWNER_DELETE)).toBe(true);
      });
      await expect(onA.markChecked(older)).rejects.toMatchObject(lost);
      expect(await records.get(`d/${stored.key}`)).toBeUndefined();
    }));

  it("a token secret created under a lost lock is refused: the other host's secret is the one both use", () =>
    onTwoHosts(async (a, b, table) => {
      // Each host's store of secrets, as loadTokenSecret opens it; A's pauses after its locked read.
      const openRecords = a.records.bind(a);
      a.records = <T>(namespace: string) => {
        const store = openRecords<T>(namespace);
        if (namespace === "secrets")
          afterNextRead(
            { store },
            "store",
            "get",
            async () => {
              await endLockBackend(server, table, "token-secret");
              await loadTokenSecret(b);
            },
            2,
          );
        return store;
      };
      await expect(loadTokenSecret(a)).rejects.toMatchObject(lost);
      a.records = openRecords;
      expect((await loadTokenSecret(a)).equals(await loadTokenSecret(b))).toBe(true);
    }));

  it("a cursor key created under a lost lock is refused: the other host's key is the one both read", async () => {
    const table = freshTable();
    const a = await PostgresKv.open(server.url, { table });
    const b = await PostgresKv.open(server.url, { table });
    try {
      // A's first read finds no key, and so does its second, under the lock: then the lock is lost.
      const get = a.get.bind(a);
      let reads = 0;
      a.get = async (key) => {
        const value = await get(key);
        if (++reads === 2) {
          await endLockBackend(server, table, "cursor-key");
          await storedCursorKey(b);
        }
        return value;
      };
      await expect(storedCursorKey(a)).rejects.toMatchObject(lost);
      a.get = get;
      expect((await storedCursorKey(a)).equals(await storedCursorKey(b))).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a failed deploy's discard under a lost lifecycle lock is refused: the other host's staged client files stay", () =>
    onTwoHosts(async (a, b, table) => {
      const bytes = Buffer.from("<h1>hi</h1>");
      const file = { path: "index.html", bytes, hash: createHash("sha256").update(bytes).digest("hex") };
      const onA = new ClientFileStore(a);
      const onB = new ClientFileStore(b);
      let fromB: Awaited<ReturnType<ClientFileStore["stage"]>> | undefined;
      // A stages a version, then fails; meanwhile its lock is lost and B stages the same files.
      const discarded = a.exclusive("deployment-lifecycle:app", async (fence) => {
        const staged = await onA.stage("app", [file], undefined);
        await endLockBackend(server, table, "deployment-lifecycle:app");
        fromB = await b.exclusive("deployment-lifecycle:app", () => onB.stage("app", [file], undefined));
        await onA.discard("app", staged, undefined, fence);
      });
      await expect(discarded).rejects.toMatchObject(lost);
      const ref = fromB?.ref;
      if (!ref) throw new Error("B staged no version.");
      const found = await onB.lookup("app", ref, "index.html", true);
      expect(found !== "missing" && found?.bytes?.equals(bytes)).toBe(true);
    }));
});
