/**
 * bench/storage: upload and download throughput of 5 MiB files over HTTP (storage routes, type
 * checks, quota, filesystem blob store with fsync), next to a plain fs copy of the same bytes
 * (write + fsync, read back) in ONE run. Not a test: prints numbers and ratios.
 *
 *   npm run bench:storage
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { sendRequest } from "../../dist/cli/http.js";
import { startHost } from "../../dist/host/host.js";

const FILES = Number(process.env.BENCH_FILES ?? 15);
const SIZE = 5 * 1024 * 1024;

function mbPerSecond(bytes: number, ns: bigint): number {
  return bytes / 1024 / 1024 / (Number(ns) / 1e9);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-storage-"));
  const adminToken = randomBytes(12).toString("hex");
  const host = await startHost({
    requestQuota: false,
    data: join(dir, "host"),
    port: 0,
    domain: "localhost",
    adminToken,
    logDestination: false,
  });
  const admin = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const developer = (
    await sendRequest(`${host.url}/v1/developers`, { method: "POST", headers: admin, body: "{}" })
  ).json<{ id: string }>();
  const { code } = await bundleCapsule("fixtures/todo");
  await sendRequest(`${host.url}/v1/deploys`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ id: "bench", code, owner: developer.id }),
  });
  const token = (
    await sendRequest(`${host.url}/v1/deploys/bench/sessions`, {
      method: "POST",
      headers: admin,
      body: '{"email":"bench@example.com"}',
    })
  ).json<{ token: string }>().token;
  // A PNG signature first, so random bytes can never look like an executable.
  const files = Array.from({ length: FILES }, () =>
    Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(SIZE - 8)]),
  );

  const keys: string[] = [];
  let start = process.hrtime.bigint();
  for (const file of files) {
    const response = await sendRequest(`${host.deploymentUrl("bench")}/storage`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "image/png" },
      body: file,
    });
    if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${response.text()}`);
    keys.push(response.json<{ key: string }>().key);
  }
  const upload = mbPerSecond(SIZE * FILES, process.hrtime.bigint() - start);
  start = process.hrtime.bigint();
  for (const key of keys) {
    const response = await sendRequest(`${host.deploymentUrl("bench")}/storage/${key}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (response.body.length !== SIZE) throw new Error("short download");
  }
  const download = mbPerSecond(SIZE * FILES, process.hrtime.bigint() - start);

  start = process.hrtime.bigint();
  for (const [i, file] of files.entries()) {
    const handle = await open(join(dir, `plain-${i}`), "w");
    await handle.writeFile(file);
    await handle.sync();
    await handle.close();
  }
  const fsWrite = mbPerSecond(SIZE * FILES, process.hrtime.bigint() - start);
  start = process.hrtime.bigint();
  for (let i = 0; i < FILES; i++) await readFile(join(dir, `plain-${i}`));
  const fsRead = mbPerSecond(SIZE * FILES, process.hrtime.bigint() - start);

  console.log(
    `bench/storage on ${process.platform} ${process.arch}, Node ${process.version}; ${FILES} files of 5 MiB, one at a time`,
  );
  console.log(
    `upload over HTTP:   ${upload.toFixed(0).padStart(5)} MiB/s   plain fs write+fsync: ${fsWrite.toFixed(0).padStart(5)} MiB/s   ratio ${(upload / fsWrite).toFixed(2)}`,
  );
  console.log(
    `download over HTTP: ${download.toFixed(0).padStart(5)} MiB/s   plain fs read:        ${fsRead.toFixed(0).padStart(5)} MiB/s   ratio ${(download / fsRead).toFixed(2)}`,
  );
  await host.close();
  await rm(dir, { recursive: true, force: true });
}

await main();
