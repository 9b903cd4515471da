/**
 * Host backups (`platform host backup`, `GET /v1/backup`): a backup taken from a real `platform
 * host` under write load restores, through `platform host --data`, to a host holding every write
 * acknowledged before the backup began, self-consistent (counts, indexes, files, quota, sessions);
 * the route's access rules; a file deleted after the snapshot keeps its bytes in the backup.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { get, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type HttpResponse, localhostLookup, sendRequest } from "../cli/http.js";
import { startHost } from "../host/host.js";
import { restoreBackup } from "../host/index.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { type CliProcess, freePort, runCliAsync, startCli } from "./helpers/cli.js";
import { deferred } from "./helpers/deferred.js";
import { exportZip, importZip, rewriteZip } from "./helpers/export-import.js";
import { deployOwnedWithSession, fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";
import { type HostProcess, startHostProcess } from "./helpers/host-process.js";
import { storableRandomBytes } from "./helpers/random-bytes.js";

const TOKEN = randomBytes(16).toString("hex");

/** A worker's sequential operations: the state after each acknowledged one, and when it was acked. */
interface History<S> {
  states: S[];
  ackedAt: number[];
}

/** How many of `history`'s operations were acknowledged before `time`. */
function ackedBefore(history: History<unknown>, time: number): number {
  return history.ackedAt.filter((at) => at < time).length;
}

/**
 * True when `restored` is the state after some prefix of the worker's operations at least as long
 * as the ones acknowledged before the backup: every acknowledged write present, and the rest as a
 * snapshot would see a sequential worker (a prefix, never a mix).
 */
function matchesPrefix<S>(history: History<S>, before: number, restored: S, same: (a: S, b: S) => boolean) {
  for (let k = before; k < history.states.length; k++) if (same(history.states[k] as S, restored)) return k;
  return -1;
}

type Todos = Map<string, boolean>;

const sameTodos = (a: Todos, b: Todos) =>
  a.size === b.size && [...a].every(([id, done]) => b.get(id) === done);
const sameKeys = (a: Set<string>, b: Set<string>) => a.size === b.size && [...a].every((key) => b.has(key));

function expectOk(response: HttpResponse, status = 200): HttpResponse {
  expect(response.status, response.text()).toBe(status);
  return response;
}

describe("platform host backup under write load", () => {
  let source: HostProcess;
  let restored: CliProcess | undefined;
  let dir: string;
  const app = (port: number) => `http://todo.localhost:${port}`;
  const control = (port: number) => `http://localhost:${port}`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "platform-backup-"));
    source = await startHostProcess("platform-backup-source-", TOKEN, ["--request-quota", "0"]);
  });
  afterAll(async () => {
    await restored?.stop();
    await source?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("restores to a host holding every write acknowledged before it began", async () => {
    const port = source.port;
    const admin = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const developer = expectOk(
      await sendRequest(`${control(port)}/v1/developers`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ name: "ada", email: "ada@example.com" }),
      }),
      201,
    ).json<{ id: string; token: string }>();
    expectOk(
      await sendRequest(`${control(port)}/v1/deploys`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ id: "todo", code: await fixtureCode("todo"), owner: developer.id }),
        timeoutMs: 60_000,
      }),
      201,
    );
    const account = expectOk(
      await sendRequest(`${control(port)}/v1/deploys/todo/sessions`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ email: "user@example.com" }),
      }),
      201,
    ).json<{ token: string }>().token;
    const guest = expectOk(await sendRequest(`${app(port)}/__platform/auth/guest`, { method: "POST" })).json<{
      token: string;
    }>().token;

    // Load: three workers each add, toggle and remove their own todos in sequence; one uploads
    // and deletes files. Each keeps the state after every acknowledged operation.
    let stopped = false;
    const call = (kind: string, name: string, args: unknown) =>
      sendRequest(`${app(port)}/api/${kind}/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(args),
        timeoutMs: 60_000,
      });
    const todoWorker = async (history: History<Todos>, worker: number) => {
      let state: Todos = new Map();
      for (let step = 0; !stopped; step++) {
        const ids = [...state.keys()];
        const next = new Map(state);
        if (step % 4 === 3 && ids.length > 0) {
          const id = ids[step % ids.length] as string;
          expectOk(await call("mutation", "remove", { id }));
          next.delete(id);
        } else if (step % 2 === 1 && ids.length > 0) {
          const id = ids[ids.length - 1] as string;
          const done = expectOk(await call("mutation", "toggle", { id })).json<{ value: boolean }>().value;
          next.set(id, done);
        } else {
          const id = expectOk(await call("mutation", "add", { text: `w${worker}-${step}` })).json<{
            value: string;
          }>().value;
          next.set(id, false);
        }
        history.ackedAt.push(performance.now());
        history.states.push(next);
        state = next;
      }
    };
    const files = new Map<string, Buffer>();
    const fileWorker = async (history: History<Set<string>>) => {
      let state = new Set<string>();
      for (let step = 0; !stopped; step++) {
        const next = new Set(state);
        if (step % 3 === 2) {
          const key = [...state][0] as string;
          expectOk(
            await sendRequest(`${app(port)}/storage/${key}`, {
              method: "DELETE",
              headers: { authorization: `Bearer ${account}` },
            }),
            204,
          );
          next.delete(key);
        } else {
          const bytes = storableRandomBytes(20_000 + step);
          const key = expectOk(
            await sendRequest(`${app(port)}/storage`, {
              method: "POST",
              headers: { authorization: `Bearer ${account}`, "content-type": "application/octet-stream" },
              body: bytes,
              timeoutMs: 60_000,
            }),
            201,
          ).json<{ key: string }>().key;
          files.set(key, bytes);
          next.add(key);
        }
        history.ackedAt.push(performance.now());
        history.states.push(next);
        state = next;
      }
    };
    const todoHistories: Array<History<Todos>> = [0, 1, 2].map(() => ({ states: [new Map()], ackedAt: [0] }));
    const fileHistory: History<Set<string>> = { states: [new Set()], ackedAt: [0] };
    const load = Promise.all([...todoHistories.map((h, i) => todoWorker(h, i)), fileWorker(fileHistory)]);
    load.catch(() => {
      stopped = true;
    });
    // Some writes first, so the backup has acknowledged ones to keep.
    while (fileHistory.states.length < 8 || todoHistories.some((h) => h.states.length < 8))
      await new Promise((resolve) => setTimeout(resolve, 50));

    const out = join(dir, "restored");
    const backupStarted = performance.now();
    const backup = await runCliAsync(["host", "backup", "--host", control(port), "--out", out, "--json"], {
      PLATFORM_ADMIN_TOKEN: TOKEN,
    });
    const backupEnded = performance.now();
    stopped = true;
    await load;
    expect(backup.status, backup.stderr).toBe(0);
    const result = JSON.parse(backup.stdout) as {
      out: string;
      entries: number;
      objects: number;
      missing: string[];
    };
    expect(result.out).toBe(out);
    expect(result.missing).toEqual([]);
    // The host kept serving: writes were acknowledged while the backup ran.
    const during = [...todoHistories, fileHistory].flatMap((h) =>
      h.ackedAt.filter((at) => at > backupStarted && at < backupEnded),
    );
    expect(during.length).toBeGreaterThan(0);
    // The operator token is not part of the backup.
    expect(existsSync(join(out, "admin-token"))).toBe(false);
    expect((await readdir(out)).sort()).toEqual(["backup.json", "blobs", "db"]);

    // The source stops; a host starts from the backup with the same operator token.
    await source.stop();
    const restoredPort = await freePort();
    restored = startCli(["host", "--port", String(restoredPort), "--data", out, "--request-quota", "0"], {
      PLATFORM_ADMIN_TOKEN: TOKEN,
    });
    await restored.waitFor(/platform host listening/, 60_000);
    const again = (kind: string, name: string, args: unknown, token?: string) =>
      sendRequest(`${app(restoredPort)}/api/${kind}/${name}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(args),
        timeoutMs: 60_000,
      });

    // Every todo worker's rows are the state after a prefix of its operations that holds every
    // operation acknowledged before the backup began.
    const existing = new Map<string, boolean>();
    for (const history of todoHistories) {
      const ids = new Set(history.states.flatMap((state) => [...state.keys()]));
      const found: Todos = new Map();
      for (const id of ids) {
        const row = expectOk(await again("query", "get", { id })).json<{ value: { done: boolean } | null }>()
          .value;
        if (row) found.set(id, row.done);
      }
      const before = ackedBefore(history, backupStarted);
      expect(before).toBeGreaterThanOrEqual(8);
      expect(
        matchesPrefix(history, before, found, sameTodos),
        `restored todos ${JSON.stringify([...found])}`,
      ).not.toBe(-1);
      for (const [id, done] of found) existing.set(id, done);
    }
    // Stored counts and the by_done index agree with the rows.
    expect(expectOk(await again("query", "count", {})).json<{ value: number }>().value).toBe(existing.size);
    const open = expectOk(await again("query", "open", {})).json<{ value: Array<{ id: string }> }>().value;
    expect(open.map((row) => row.id).sort()).toEqual(
      [...existing]
        .filter(([, done]) => !done)
        .map(([id]) => id)
        .sort(),
    );

    // Files: a prefix of the file worker's operations, every one downloadable with its bytes.
    const listing = expectOk(
      await sendRequest(`${app(restoredPort)}/__platform/storage`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      }),
    ).json<{ objects: Array<{ key: string; size: number }>; totals: { count: number; bytes: number } }>();
    const keys = new Set(listing.objects.map((object) => object.key));
    expect(
      matchesPrefix(fileHistory, ackedBefore(fileHistory, backupStarted), keys, sameKeys),
      `restored files ${[...keys].join(", ")}`,
    ).not.toBe(-1);
    let bytes = 0;
    for (const key of keys) {
      const download = await sendRequest(`${app(restoredPort)}/storage/${key}`, {
        headers: { authorization: `Bearer ${account}` },
      });
      expectOk(download);
      expect(download.body.equals(files.get(key) as Buffer), key).toBe(true);
      bytes += download.body.length;
    }
    expect(listing.totals).toEqual({ count: keys.size, bytes });
    // The owner's quota usage is what the files add up to.
    const metrics = expectOk(
      await sendRequest(`${control(restoredPort)}/metrics`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      }),
    ).text();
    const usage = new RegExp(`platform_storage_bytes\\{owner="${developer.id}"\\} (\\d+)`).exec(metrics);
    expect(Number(usage?.[1] ?? 0)).toBe(bytes);

    // Sessions and tokens of the source work on the restored host; a made-up one does not.
    expectOk(await again("query", "count", {}, guest));
    expectOk(await again("query", "count", {}, account));
    expect((await again("query", "count", {}, `${guest}x`)).status).toBe(401);
    const me = expectOk(
      await sendRequest(`${control(restoredPort)}/v1/me`, {
        headers: { authorization: `Bearer ${developer.token}` },
      }),
    ).json<{ kind: string; deploys: string[] }>();
    expect(me).toMatchObject({ kind: "developer", deploys: ["todo"] });
    // And it takes writes.
    expectOk(await again("mutation", "add", { text: "after the restore" }));
    expect(expectOk(await again("query", "count", {})).json<{ value: number }>().value).toBe(
      existing.size + 1,
    );
  });
});

describe("platform host backup refusals", () => {
  let host: TestHost;
  let dir: string;
  beforeAll(async () => {
    host = await startTestHost();
    dir = await mkdtemp(join(tmpdir(), "platform-backup-out-"));
  });
  afterAll(async () => {
    await host.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses an --out that holds anything, and writes into an empty one", async () => {
    const full = join(dir, "full");
    await mkdir(full);
    await writeFile(join(full, "keep.txt"), "mine");
    const refused = await runCliAsync(["host", "backup", "--host", host.url, "--out", full], {
      PLATFORM_ADMIN_TOKEN: host.adminToken,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("is not empty; a backup is written only to a new or empty folder");
    expect(await readdir(full)).toEqual(["keep.txt"]);
    expect(await readFile(join(full, "keep.txt"), "utf8")).toBe("mine");
    const file = join(dir, "file");
    await writeFile(file, "x");
    expect(
      (
        await runCliAsync(["host", "backup", "--host", host.url, "--out", file], {
          PLATFORM_ADMIN_TOKEN: host.adminToken,
        })
      ).stderr,
    ).toContain("is a file");
    const empty = join(dir, "empty");
    await mkdir(empty);
    const written = await runCliAsync(["host", "backup", "--host", host.url, "--out", empty], {
      PLATFORM_ADMIN_TOKEN: host.adminToken,
    });
    expect(written.status, written.stderr).toBe(0);
    expect(written.stdout).toContain(`written to ${empty}`);
    expect((await readdir(empty)).sort()).toEqual(["backup.json", "blobs", "db"]);
    // Nothing is left beside it.
    expect((await readdir(dir)).sort()).toEqual(["empty", "file", "full"]);
  });

  it("is the operator's alone", async () => {
    const developer = (await host.admin("/v1/developers", "POST", { name: "eve" })).json<{ token: string }>();
    const asDeveloper = await runCliAsync(["host", "backup", "--host", host.url, "--out", join(dir, "eve")], {
      PLATFORM_ADMIN_TOKEN: developer.token,
    });
    expect(asDeveloper.status).toBe(1);
    expect(asDeveloper.stderr).toContain("error: forbidden: Only the host's operator can back up the host");
    const noToken = await runCliAsync(["host", "backup", "--host", host.url, "--out", join(dir, "none")], {
      PLATFORM_ADMIN_TOKEN: "",
    });
    expect(noToken.stderr).toContain("error: unauthorized: A host backup needs the operator token");
    expect((await sendRequest(`${host.url}/v1/backup`)).status).toBe(401);
    expect(existsSync(join(dir, "eve"))).toBe(false);
  });
});

/**
 * Reads a streamed response line by line; `next()` resolves with the next line (undefined at the
 * end). `pause()` stops reading from the socket: the host then blocks once the buffers between
 * are full, midway through its stream.
 */
function lineReader(url: string, token: string) {
  const lines: string[] = [];
  const waiting: Array<() => void> = [];
  let ended = false;
  let pending: Buffer[] = [];
  let response: IncomingMessage | undefined;
  let request: ReturnType<typeof get> | undefined;
  const wake = () => {
    for (const resume of waiting.splice(0)) resume();
  };
  const opened = new Promise<number>((resolve, reject) => {
    const req = get(
      url,
      { headers: { authorization: `Bearer ${token}` }, lookup: localhostLookup },
      (res) => {
        response = res;
        res.on("data", (chunk: Buffer) => {
          let data = chunk;
          for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10)) {
            pending.push(data.subarray(0, at));
            lines.push(Buffer.concat(pending).toString("utf8"));
            pending = [];
            data = data.subarray(at + 1);
          }
          if (data.length > 0) pending.push(data);
          wake();
        });
        res.on("close", () => {
          ended = true;
          wake();
        });
        resolve(res.statusCode ?? 0);
      },
    );
    request = req;
    req.on("error", reject);
  });
  return {
    opened,
    async next(): Promise<string | undefined> {
      while (lines.length === 0 && !ended) await new Promise<void>((resolve) => waiting.push(resolve));
      return lines.shift();
    },
    pause: () => response?.pause(),
    resume: () => response?.resume(),
    /** Ends the request, answered or not. */
    close: () => {
      response?.destroy();
      request?.destroy();
    },
  };
}

describe("the backup route", () => {
  let host: TestHost;
  let account: string;
  beforeAll(async () => {
    host = await startTestHost();
    account = await deployOwnedWithSession(host, "files", "todo", "user@example.com");
  });
  afterAll(() => host.dispose());

  const upload = async (bytes: Buffer | string) =>
    expectOk(
      await sendRequest(`${host.deploymentUrl("files")}/storage`, {
        method: "POST",
        headers: { authorization: `Bearer ${account}`, "content-type": "application/octet-stream" },
        body: bytes,
        timeoutMs: 60_000,
      }),
      201,
    ).json<{ key: string }>().key;
  const remove = async (key: string) =>
    expectOk(
      await sendRequest(`${host.deploymentUrl("files")}/storage/${key}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${account}` },
      }),
      204,
    );
  const blobPath = (key: string) => join(host.dir, "blobs", "files", ...key.split("/"));
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  };
  /** Waits until a backup has begun: another is refused. */
  const untilBackupRuns = async () => {
    let status = 0;
    for (let i = 0; i < 400 && status !== 409; i++) {
      status = (
        await sendRequest(`${host.url}/v1/backup`, {
          headers: { authorization: `Bearer ${host.adminToken}` },
          maxBytes: Number.POSITIVE_INFINITY,
        })
      ).status;
      if (status !== 409) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).toBe(409);
  };

  it("keeps the bytes of a file deleted after the snapshot until the backup has them", async () => {
    // Files of 4 MiB: the stream (base64) outgrows every buffer between host and reader long
    // before the last file, so the paused reader stops the host midway through the files.
    const sizes = Array.from({ length: 8 }, (_, i) => storableRandomBytes(4 * 1024 * 1024 - i));
    const uploaded = new Map<string, Buffer>();
    for (const bytes of sizes) uploaded.set(await upload(bytes), bytes);
    // The backup copies files in key order: the last one is deleted after the snapshot.
    const [last, ...others] = [...uploaded.keys()].sort().reverse() as [string, ...string[]];
    const backup = lineReader(`${host.url}/v1/backup`, host.adminToken);
    expect(await backup.opened).toBe(200);
    const head = JSON.parse((await backup.next()) as string) as {
      head: { objects: number; entries: number };
    };
    backup.pause();
    expect(head.head.objects).toBe(8);
    // The snapshot is taken: the delete is acknowledged, yet its bytes stay while the backup runs.
    await remove(last);
    expect(existsSync(blobPath(last))).toBe(true);
    // A file uploaded after the snapshot is in no backup: deleting it frees its bytes at once, so
    // an upload-and-delete loop cannot fill the disk while the quota shows nothing.
    const later = await upload(storableRandomBytes(1024));
    expect(existsSync(blobPath(later))).toBe(true);
    await remove(later);
    expect(existsSync(blobPath(later))).toBe(false);
    // A second backup waits its turn.
    const second = await sendRequest(`${host.url}/v1/backup`, {
      headers: { authorization: `Bearer ${host.adminToken}` },
    });
    expect(second.status).toBe(409);
    expect(second.json<{ error: { code: string } }>().error.code).toBe("conflict");
    backup.resume();
    const objects = new Map<string, Buffer>();
    let end: { entries: number; objects: number; missing: string[] } | undefined;
    for (let line = await backup.next(); line !== undefined; line = await backup.next()) {
      const parsed = JSON.parse(line) as { object?: { key: string; data: string }; end?: typeof end };
      if (parsed.object) objects.set(parsed.object.key, Buffer.from(parsed.object.data, "base64"));
      if (parsed.end) end = parsed.end;
    }
    expect(end).toMatchObject({ entries: head.head.entries, objects: 8, missing: [] });
    for (const [key, bytes] of uploaded) expect(objects.get(`files/${key}`)?.equals(bytes), key).toBe(true);
    // Once the backup is over, the held deletion goes on; the other files stay.
    await until(() => !existsSync(blobPath(last)));
    expect(existsSync(blobPath(last))).toBe(false);
    for (const key of others) expect(existsSync(blobPath(key))).toBe(true);
    for (const key of others) await remove(key);
  });

  it("refuses an import writing other bytes under the key of a file deleted while the backup still copies it", async () => {
    // The tenant deletes a file after the snapshot (its bytes are held for the backup), then
    // imports an archive naming the same key with other bytes: the backup would copy those under
    // the old record, and its restore would refuse the whole backup.
    // As above: 8 files of 4 MiB outgrow every buffer between host and reader, so the paused
    // backup cannot end (and release its hold) before the import.
    const filler = [];
    for (let i = 0; i < 8; i++) filler.push(await upload(storableRandomBytes(4 * 1024 * 1024 - i)));
    const key = await upload(storableRandomBytes(5000));
    const exported = await exportZip(host, "files");
    expect(exported.status).toBe(200);
    const archive = await rewriteZip(exported.body, (files) => {
      files.set(`objects/${key}`, storableRandomBytes(7000));
      const records = (files.get("objects.jsonl") as Buffer).toString().replace('"size":5000', '"size":7000');
      files.set("objects.jsonl", Buffer.from(records));
    });
    const backup = lineReader(`${host.url}/v1/backup`, host.adminToken);
    expect(await backup.opened).toBe(200);
    await backup.next();
    backup.pause();
    await remove(key);
    // Deleted, but its bytes are kept for the backup running.
    expect(existsSync(blobPath(key))).toBe(true);
    const imported = await importZip(host, "files", archive, "?replace=true");
    expect(imported.status, imported.text()).toBe(409);
    expect(imported.json<{ error: { code: string } }>().error.code).toBe("conflict");
    backup.resume();
    let end: { missing: string[] } | undefined;
    for (let line = await backup.next(); line !== undefined; line = await backup.next()) {
      const parsed = JSON.parse(line) as { end?: typeof end };
      if (parsed.end) end = parsed.end;
    }
    expect(end?.missing).toEqual([]);
    for (const other of filler) await remove(other);
  });

  it("ends when its client goes away: held deletions go on, and the next backup runs", async () => {
    const key = await upload(storableRandomBytes(4 * 1024 * 1024));
    const filler = [];
    for (let i = 0; i < 4; i++) filler.push(await upload(storableRandomBytes(4 * 1024 * 1024)));
    const abandoned = lineReader(`${host.url}/v1/backup`, host.adminToken);
    expect(await abandoned.opened).toBe(200);
    await abandoned.next();
    abandoned.pause();
    await remove(key);
    abandoned.close();
    await until(() => !existsSync(blobPath(key)));
    expect(existsSync(blobPath(key))).toBe(false);
    let status = 409;
    for (let i = 0; i < 400 && status === 409; i++) {
      const next = lineReader(`${host.url}/v1/backup`, host.adminToken);
      status = await next.opened;
      next.close();
      if (status === 409) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).toBe(200);
    for (const other of filler) await remove(other);
  });

  it("ends when its client goes away while it waits for the locks, and holds no deletion meanwhile", async () => {
    // A backup waits for every deployment's lock: a client that left then (an operator's Ctrl-C,
    // a proxy's timeout) had left it running for good, every later backup refused 409 and every
    // deletion's bytes kept; and a tenant's long migration held every deletion of the host while
    // the backup waited for it (an attack review).
    expect((await host.deployFixture("zz-held", "todo")).status).toBe(201);
    const slow = deferred();
    const migrating = host.deployments.whileLocked("zz-held", () => slow.promise);
    const key = await upload(storableRandomBytes(1000));
    const abandoned = lineReader(`${host.url}/v1/backup`, host.adminToken);
    await untilBackupRuns();
    // Waiting for the lock, it has no snapshot yet: a deleted file's bytes go at once.
    await remove(key);
    await until(() => !existsSync(blobPath(key)));
    expect(existsSync(blobPath(key))).toBe(false);
    await vi.waitFor(() => expect(host.deployments.lifecycleQueue("zz-held")).toBe(2), { timeout: 20_000 });
    abandoned.close();
    await abandoned.opened.catch(() => {});
    // Its turn is given up at once: a retry is taken, and waits for the lock beside it.
    const ask = () => {
      const reader = lineReader(`${host.url}/v1/backup`, host.adminToken);
      void reader.opened.then(
        (status) => {
          if (status === 409) retry = ask();
        },
        () => {},
      );
      return reader;
    };
    let retry = ask();
    await vi.waitFor(() => expect(host.deployments.lifecycleQueue("zz-held")).toBe(3), { timeout: 20_000 });
    slow.resolve();
    await migrating;
    expect(await retry.opened).toBe(200);
    retry.close();
    // And the bytes of a file deleted now go, no backup holding them.
    const after = await upload(storableRandomBytes(1000));
    await remove(after);
    await until(() => !existsSync(blobPath(after)));
    expect(existsSync(blobPath(after))).toBe(false);
  });

  it("waits for a deployment busy in a slow import without holding up another's deploy", async () => {
    // A tenant's long import holds its deployment's lifecycle lock. The backup's snapshot needs
    // every deployment's lock; taken one after another, it would hold "files" (sorted first)
    // while it waits for "zz-slow", and another tenant's deploy of "files" would wait for both.
    expect((await host.deployFixture("zz-slow", "todo")).status).toBe(201);
    const slowImport = deferred();
    const importing = host.deployments.whileLocked("zz-slow", () => slowImport.promise);
    const backup = lineReader(`${host.url}/v1/backup`, host.adminToken);
    // The backup has begun (a second is refused) and waits for "zz-slow".
    await untilBackupRuns();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const redeployed = await host.deployFixture("files", "todo");
    expect(redeployed.status, redeployed.text()).toBe(200);
    slowImport.resolve();
    await importing;
    expect(await backup.opened).toBe(200);
    let end: { missing: string[] } | undefined;
    for (let line = await backup.next(); line !== undefined; line = await backup.next()) {
      const parsed = JSON.parse(line) as { end?: typeof end };
      if (parsed.end) end = parsed.end;
    }
    expect(end?.missing).toEqual([]);
  });

  it("restores only a whole, untampered stream", async () => {
    const key = await upload(storableRandomBytes(1000));
    const text = expectOk(
      await sendRequest(`${host.url}/v1/backup`, {
        headers: { authorization: `Bearer ${host.adminToken}` },
        // A whole backup, of every file stored above: more than the CLI reads of an answer.
        maxBytes: Number.POSITIVE_INFINITY,
      }),
    ).text();
    await remove(key);
    const lines = text.trimEnd().split("\n");
    const attempt = async (variant: string[]) => {
      const target = await mkdtemp(join(tmpdir(), "platform-restore-"));
      try {
        await restoreBackup([Buffer.from(`${variant.join("\n")}\n`)], target);
        return "ok";
      } catch (error) {
        return `${(error as { code?: string }).code}: ${(error as Error).message}`;
      } finally {
        await rm(target, { recursive: true, force: true });
      }
    };
    const replaced = (index: number, line: string) => lines.map((l, i) => (i === index ? line : l));
    const entriesAt = lines.findIndex((line) => line.startsWith('{"entries"'));
    const objectAt = lines.findIndex((line) => line.startsWith('{"object"'));
    const entries = JSON.parse(lines[entriesAt] as string).entries as Array<[string, string]>;
    const object = JSON.parse(lines[objectAt] as string).object as { key: string; data: string };
    expect(entries.length).toBeGreaterThan(2);
    expect(await attempt(lines)).toBe("ok");
    expect(await attempt(lines.slice(0, -1))).toBe(
      "unavailable: The backup stream ended early; run it again.",
    );
    expect(await attempt(lines.slice(1))).toBe(
      "bad_request: Not a valid host backup: the stream does not begin with a backup head.",
    );
    const swapped = [entries[1], entries[0], ...entries.slice(2)];
    expect(await attempt(replaced(entriesAt, JSON.stringify({ entries: swapped })))).toBe(
      "bad_request: Not a valid host backup: entries are out of order.",
    );
    expect(await attempt(replaced(entriesAt, JSON.stringify({ entries: entries.slice(1) })))).toBe(
      "bad_request: Not a valid host backup: what arrived does not add up to the totals the host sent.",
    );
    // Bytes one short, the end line told to agree: the record still names 1000 bytes.
    const shorter = {
      key: object.key,
      data: Buffer.from(object.data, "base64").subarray(1).toString("base64"),
    };
    expect(await attempt(replaced(objectAt, JSON.stringify({ object: shorter })))).toBe(
      "bad_request: Not a valid host backup: what arrived does not add up to the totals the host sent.",
    );
    const end = JSON.parse(lines.at(-1) as string) as { end: { objectBytes: number } };
    const lying = replaced(objectAt, JSON.stringify({ object: shorter }));
    lying[lying.length - 1] = JSON.stringify({ end: { ...end.end, objectBytes: end.end.objectBytes - 1 } });
    const wrongSize = `bad_request: Not a valid host backup: the bytes of object files/${key} are not the 1000 its record says.`;
    expect(await attempt(lying)).toBe(wrongSize);
    // Bytes under another key: the record's key has none.
    expect(
      await attempt(replaced(objectAt, JSON.stringify({ object: { ...object, key: "files/private/x" } }))),
    ).toBe(wrongSize);
    expect(
      await attempt([lines[0] as string, '{"error":{"code":"unavailable","message":"S3 is down."}}']),
    ).toBe("unavailable: The host could not finish the backup: S3 is down.");
    const head = JSON.parse(lines[0] as string) as { head: Record<string, unknown> };
    expect(await attempt(replaced(0, JSON.stringify({ head: { ...head.head, version: 2 } })))).toBe(
      "bad_request: Not a valid host backup: format version 2; this platform reads version 1.",
    );
    expect(await attempt(replaced(entriesAt, "not json"))).toBe(
      "bad_request: Not a valid host backup: a line is not JSON.",
    );
    // A line without end (a server that is not a host, or one gone wrong) is refused at the limit,
    // not read until memory runs out: the same MiB again and again, never a newline.
    const mebibyte = Buffer.alloc(1024 * 1024, "x");
    let sent = 0;
    const endless = (function* () {
      yield Buffer.from(`${lines[0]}\n{"entries":[["`);
      for (;;) {
        sent += mebibyte.length;
        yield mebibyte;
      }
    })();
    const target = await mkdtemp(join(tmpdir(), "platform-restore-"));
    try {
      await expect(restoreBackup(endless, target)).rejects.toThrow(
        `Not a valid host backup: a line is longer than ${LIMITS.backupLineBytes} bytes, more than any backup line.`,
      );
      expect(sent).toBeLessThanOrEqual(LIMITS.backupLineBytes + mebibyte.length);
    } finally {
      await rm(target, { recursive: true, force: true });
    }
  });
});

const postgresInstalled = postgresBinDir() !== undefined;

describe.skipIf(!postgresInstalled)("platform host backup on PostgreSQL", () => {
  let server: LocalPostgres;
  let dir: string;
  beforeAll(async () => {
    server = await startLocalPostgres();
    dir = await mkdtemp(join(tmpdir(), "platform-backup-pg-"));
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("writes an embedded data folder that serves the same data", async () => {
    const source = await startTestHost({ database: server.url });
    const out = join(dir, "copy");
    let account: string;
    let listed: string;
    let file: { key: string; bytes: Buffer };
    try {
      account = await deployOwnedWithSession(source, "pg", "todo", "user@example.com");
      for (let i = 0; i < 30; i++) expectOk(await source.call("pg", "mutation", "add", { text: `row ${i}` }));
      const bytes = storableRandomBytes(50_000);
      const key = expectOk(
        await sendRequest(`${source.deploymentUrl("pg")}/storage`, {
          method: "POST",
          headers: { authorization: `Bearer ${account}`, "content-type": "application/octet-stream" },
          body: bytes,
        }),
        201,
      ).json<{ key: string }>().key;
      file = { key, bytes };
      listed = expectOk(await source.call("pg", "query", "list")).text();
      const backup = await runCliAsync(["host", "backup", "--host", source.url, "--out", out, "--json"], {
        PLATFORM_ADMIN_TOKEN: source.adminToken,
      });
      expect(backup.status, backup.stderr).toBe(0);
      expect(JSON.parse(backup.stdout)).toMatchObject({ store: "postgres", objects: 1, missing: [] });
    } finally {
      await source.dispose();
    }
    const copy = await startHost({
      data: out,
      port: 0,
      domain: "localhost",
      adminToken: "another-token",
      logDestination: false,
    });
    try {
      const url = copy.deploymentUrl("pg");
      const list = await sendRequest(`${url}/api/query/list`, { method: "POST", body: "{}" });
      expect(list.text()).toBe(listed);
      const count = await sendRequest(`${url}/api/query/count`, {
        method: "POST",
        headers: { authorization: `Bearer ${account}` },
        body: "{}",
      });
      expect(count.json()).toEqual({ value: 30 });
      const download = await sendRequest(`${url}/storage/${file.key}`, {
        headers: { authorization: `Bearer ${account}` },
      });
      expect(download.status).toBe(200);
      expect(download.body.equals(file.bytes)).toBe(true);
    } finally {
      await copy.close();
    }
  }, 120_000);
});
