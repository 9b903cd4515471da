/**
 * Two real hosts on one PostgreSQL database for a test file: started before its tests, disposed
 * of after them; none where PostgreSQL is not installed (the file's tests are skipped).
 */
import { afterAll, beforeAll } from "vitest";
import { startTestHost, type TestHost } from "./host.js";
import { postgresInstalled } from "./postgres.js";

/** Starts the two hosts on `server`'s database before the file's tests; `started` receives them. */
export function twoHostsForThisFile(
  server: { url: string },
  started: (a: TestHost, b: TestHost) => void,
): void {
  const hosts: TestHost[] = [];
  beforeAll(async () => {
    if (!postgresInstalled) return;
    for (let i = 0; i < 2; i++)
      hosts.push(await startTestHost({ database: server.url, requestQuota: false }));
    started(hosts[0] as TestHost, hosts[1] as TestHost);
  }, 120_000);
  afterAll(async () => {
    for (const host of hosts) await host.dispose();
  });
}
