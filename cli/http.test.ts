import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "./http.js";

// A server in another process that drops idle connections after 3 s, as a host does after its
// keep-alive timeout, and counts the requests it answered.
const SERVER = `
let requests = 0;
const server = require("node:http").createServer((req, res) => res.end(String(++requests)));
server.keepAliveTimeout = 3000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

let child: ChildProcess;
let url: string;

beforeAll(async () => {
  child = spawn(process.execPath, ["-e", SERVER], { stdio: ["ignore", "pipe", "inherit"] });
  const [port] = (await once(child.stdout!, "data")) as [Buffer];
  url = `http://127.0.0.1:${port.toString().trim()}/`;
});

afterAll(() => {
  child.kill();
});

it("sends a request again when the kept-alive connection it went out on was already closed", async () => {
  expect((await sendRequest(url)).text()).toBe("1");
  // Block this process past the server's keep-alive timeout (3 s, and Node waits up to 1 s more),
  // as a CLI test's spawnSync does: the server closes the idle connection, and this process only
  // learns of it once it has sent again.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5000);
  const again = await sendRequest(url, { method: "POST", body: "{}" });
  expect(again.status).toBe(200);
  expect(again.text()).toBe("2");
});
