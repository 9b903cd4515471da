import { connect, type Socket } from "node:net";
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

/**
 * Sends `head` and then `body` to `host` on a raw connection kept in `sockets` (the body may stop
 * short of its Content-Length); resolves to the response's head and body once the host answers (a
 * held body gets no answer), or to what arrived when the connection fails.
 */
export function rawRequest(host: TestHost, sockets: Socket[], head: string, body: string): Promise<string> {
  const socket = connect(Number(new URL(host.url).port), "127.0.0.1");
  sockets.push(socket);
  let text = "";
  const answer = new Promise<string>((resolve) => {
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      if (text.includes("\r\n\r\n") && text.endsWith("}")) resolve(text);
    });
    socket.on("error", () => resolve(text));
  });
  socket.write(head);
  socket.write(body);
  return answer;
}
