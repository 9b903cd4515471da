import type { TestHost } from "./host.js";

/** Bytes of request bodies arriving at `host` now, as its `/metrics` says. */
export async function arrivingBytes(host: TestHost): Promise<number> {
  const metrics = (await host.admin("/metrics", "GET")).text();
  const line = metrics.split("\n").find((l) => l.startsWith("platform_request_body_bytes_arriving "));
  return Number(line?.split(" ")[1]);
}

/** Resolves once `check` holds, looking every 25 ms for at most 10 s (else fails). */
export async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the host never got there");
}
