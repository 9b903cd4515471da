import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { adminToken } from "./host-data.js";

let data: string;
const savedToken = process.env.PLATFORM_ADMIN_TOKEN;

beforeEach(async () => {
  data = await mkdtemp(join(tmpdir(), "platform-host-data-"));
  delete process.env.PLATFORM_ADMIN_TOKEN;
});
afterEach(async () => {
  if (savedToken === undefined) delete process.env.PLATFORM_ADMIN_TOKEN;
  else process.env.PLATFORM_ADMIN_TOKEN = savedToken;
  await rm(data, { recursive: true, force: true });
});

describe("the operator token kept in the data folder", () => {
  it("is made once and then read back", () => {
    const made = adminToken(data);
    expect(made.generated).toBe(true);
    expect(adminToken(data)).toEqual({ token: made.token, generated: false });
  });

  it("refuses an empty token file instead of running with an empty token (found by review)", async () => {
    await writeFile(join(data, "admin-token"), " \n");
    expect(() => adminToken(data)).toThrow(/admin-token is empty: write the operator token into it/);
  });
});
