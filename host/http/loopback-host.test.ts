import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "./loopback-host.js";

// The long ones are not remembered: answered afresh each time.
const LOOPBACK = [
  "localhost",
  "LOCALHOST:3000",
  "app.localhost:8080",
  "127.0.0.1",
  "127.255.0.9:1",
  "[::1]:3000",
  `${"a".repeat(400)}.localhost`,
];
const OTHER = [
  "evil.example",
  "localhost.evil.example",
  "127.0.0.256",
  "127.0.0.1.nip.io",
  "[::2]",
  `${"a".repeat(400)}.example`,
  "",
];

describe("loopback Host headers", () => {
  it("names loopback only, asked once or again, and after many other headers", () => {
    for (let round = 0; round < 2; round++) {
      for (const host of LOOPBACK) expect(isLoopbackHost(host), host).toBe(true);
      for (const host of OTHER) expect(isLoopbackHost(host), host).toBe(false);
    }
    // Past the headers remembered: the answers stay the same.
    for (let i = 0; i < 1000; i++) expect(isLoopbackHost(`localhost:${i}`)).toBe(true);
    for (let i = 0; i < 1000; i++) expect(isLoopbackHost(`h${i}.example`)).toBe(false);
    for (const host of LOOPBACK) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of OTHER) expect(isLoopbackHost(host), host).toBe(false);
  });
});
