/**
 * A request refused before its body was received closes its connection: kept alive, the host
 * would go on receiving and discarding a body of any size the client went on sending.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployCode("app", await fixtureCode("todo"))).status).toBe(201);
});
afterAll(() => host.dispose());

/**
 * Sends `head` (request line and headers) and the first bytes of a 1 GiB body, then nothing more;
 * resolves with what came back once the host closed the connection.
 */
function refusedUpload(hostHeader: string, requestLine: string, headers: string[]): Promise<string> {
  const { port } = new URL(host.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("latin1");
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(answer));
    socket.write(
      [
        requestLine,
        `Host: ${hostHeader}`,
        "Content-Length: 1073741824",
        ...headers,
        "",
        "x".repeat(1000),
      ].join("\r\n"),
    );
  });
}

it("an upload refused before its body came closes the connection, at an app and at the control plane", async () => {
  const app = new URL(host.deploymentUrl("app")).host;
  const control = new URL(host.url).host;
  for (const [hostHeader, requestLine, headers, status] of [
    [app, "POST /storage HTTP/1.1", ["Content-Type: image/png"], "401"],
    [
      control,
      "PUT /v1/deploys/other HTTP/1.1",
      ["Authorization: Bearer wrong", "Content-Type: application/json"],
      "403",
    ],
  ] as const) {
    const answer = await refusedUpload(hostHeader, requestLine, [...headers]);
    expect(answer.split("\r\n")[0]).toContain(` ${status} `);
    expect(answer.toLowerCase()).toContain("\r\nconnection: close\r\n");
  }
});
