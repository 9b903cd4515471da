/**
 * Malformed sync traffic ends only the socket that sent it. Against a real `platform host`
 * (supervisor and server processes) over real sockets, an anonymous client sends an upgrade whose
 * request-target cannot be parsed, then frames the WebSocket protocol refuses: a text frame that is
 * not UTF-8, a message over 1 MiB, a frame with a reserved bit set. Each is refused on its own
 * socket; the server process never stops, and another tenant's socket opened before stays open and
 * served throughout.
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup } from "../cli/http.js";
import { runCli } from "./helpers/cli.js";
import { type HostProcess, startHostProcess } from "./helpers/host-process.js";
import { connectSync, type SyncSocket } from "./helpers/sync-socket.js";

const token = "sync-malformed-token";
let running: HostProcess;
let victim: SyncSocket;
let victimClosed = false;

beforeAll(async () => {
  running = await startHostProcess("platform-sync-malformed-", token, ["--request-quota", "0"]);
  for (const name of ["victim", "attacker"]) {
    const deployed = runCli(
      ["deploy", "fixtures/todo", "--host", `http://localhost:${running.port}`, "--name", name],
      { PLATFORM_ADMIN_TOKEN: token },
    );
    expect(deployed.status, deployed.stderr).toBe(0);
  }
  victim = await connectSync(`http://victim.localhost:${running.port}`);
  victim.ws.on("close", () => {
    victimClosed = true;
  });
  victim.subscribe("list", "list", {});
  await victim.next((m) => m.type === "value" && m.id === "list");
});
afterAll(async () => {
  victim?.ws.close();
  await running?.stop();
});

/** The server process ran throughout, and the victim's socket still answers a mutation. */
let mutations = 0;
async function expectHostUnharmed(): Promise<void> {
  const id = `m${++mutations}`;
  const answer = await victim.mutation(id, "add", { text: id });
  expect(answer.error).toBeUndefined();
  expect(victimClosed).toBe(false);
  expect(running.process.output()).not.toMatch(/unhandled error|server exited/);
}

/** Sends `request` on a raw TCP connection and resolves with what comes back before it closes. */
function rawExchange(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(running.port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(request);
  });
}

/** An anonymous socket to the attacker's deployment; resolves with how it was closed. */
async function attackerSocket(send: (ws: WebSocket) => void): Promise<number> {
  const ws = new WebSocket(`ws://attacker.localhost:${running.port}/api/sync`, {
    lookup: localhostLookup,
  } as WebSocket.ClientOptions);
  ws.on("error", () => {});
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("unexpected-response", () => reject(new Error("upgrade refused")));
  });
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  send(ws);
  return closed;
}

/** One masked client frame with first byte `head` (FIN, reserved bits, opcode) and a short payload. */
function rawFrame(head: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number)));
  return Buffer.concat([Buffer.from([head, 0x80 | payload.length]), mask, masked]);
}

it("an upgrade whose request-target cannot be parsed is answered 400, and the host goes on", async () => {
  for (const target of ["//[", "//a:b", "//%"]) {
    const answer = await rawExchange(
      `GET ${target} HTTP/1.1\r\nHost: attacker.localhost:${running.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\n\r\n`,
    );
    expect(answer, target).toMatch(/^HTTP\/1\.1 400 /);
  }
  await expectHostUnharmed();
});

it("frames the protocol refuses close only the socket that sent them", async () => {
  // Not UTF-8 in a text frame (1007), a message over the 1 MiB limit (1009), a reserved bit (1002).
  expect(await attackerSocket((ws) => ws.send(Buffer.from([0xff, 0xfe, 0xfd]), { binary: false }))).toBe(
    1007,
  );
  expect(await attackerSocket((ws) => ws.send("x".repeat(1024 * 1024 + 10)))).toBe(1009);
  expect(
    await attackerSocket((ws) =>
      (ws as unknown as { _socket: { write(b: Buffer): void } })._socket.write(
        rawFrame(0x80 | 0x40 | 0x1, Buffer.from("{}")),
      ),
    ),
  ).toBe(1002);
  await expectHostUnharmed();
});
