/**
 * A capsule's declaration is whatever its bundle hands over: a forged one may carry members the
 * host does not know, at every level, and be as large as a handler's answer. The host parses it
 * once it is within LIMITS.declarationChars, keeps only what it checked, and lists deployments
 * from the records it holds rather than parsing every stored one again: 850,000 unknown members
 * in a few records made every developer's `GET /v1/me` parse them, 5.9 s in one stretch.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
});
afterAll(() => host.dispose());

/** A bundle whose default export is `declaration` as written, with no handlers of its own. */
function forged(declaration: unknown): string {
  return `var __platform_capsule = { default: { kind: "platform.capsule", definition: {}, declaration: ${JSON.stringify(declaration)} } };`;
}

const REAL = {
  apiVersion: 1,
  schema: {
    tables: {
      t: {
        fields: {
          n: { kind: "number", optional: false },
          d: { kind: "string", optional: true, default: "x" },
        },
        indexes: { by_n: ["n"] },
      },
      u: { fields: { t: { kind: "id", table: "t", optional: false } }, indexes: {} },
    },
  },
  queries: ["q"],
  mutations: ["m"],
  endpoints: [{ name: "e", method: "GET", path: "/e", readOnly: true }],
  auth: { requireSignIn: false, hasGuestUpgradeHook: false },
};

describe("a forged capsule declaration", () => {
  it("is stored with only the members the host checked", async () => {
    const junk = { a: 1, b: [1, 2, 3] };
    const declaration = {
      ...REAL,
      junk,
      schema: {
        junk,
        tables: {
          t: {
            ...REAL.schema.tables.t,
            junk,
            fields: { ...REAL.schema.tables.t.fields, n: { kind: "number", optional: false, junk } },
          },
          u: { ...REAL.schema.tables.u, fields: { t: { kind: "id", table: "t", optional: false, junk } } },
        },
      },
      endpoints: [{ ...REAL.endpoints[0], junk }],
      auth: { ...REAL.auth, junk },
    };
    const deployed = await host.deployCode("forged", forged(declaration));
    expect(deployed.status).toBe(201);
    const record = (await host.deployments.list()).find((r) => r.id === "forged");
    expect(record?.declaration).toEqual(REAL);
    expect(JSON.stringify(record?.declaration)).not.toContain("junk");
  });

  it("is refused past LIMITS.declarationChars before it is parsed, and the deployment keeps serving", async () => {
    const before = await host.deployCode("large", forged(REAL));
    expect(before.status).toBe(201);
    const most = LIMITS.declarationChars;
    const parse = vi.spyOn(JSON, "parse");
    try {
      (LIMITS as { declarationChars: number }).declarationChars = 4096;
      const junk = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]));
      const response = await host.deployCode("large", forged({ ...REAL, junk }));
      expect(response.status).toBe(400);
      expect(response.json<{ error: { code: string; message: string } }>().error).toMatchObject({
        code: "bad_request",
        message: expect.stringContaining("at most 4096 are allowed (LIMITS.declarationChars)"),
      });
      // The host never parsed the declaration's text (its JSON as the runtime answered it).
      expect(parse.mock.calls.some(([text]) => typeof text === "string" && text.includes('"k999":999'))).toBe(
        false,
      );
    } finally {
      (LIMITS as { declarationChars: number }).declarationChars = most;
      parse.mockRestore();
    }
    const record = (await host.deployments.list()).find((r) => r.id === "large");
    expect(record?.declaration).toEqual(REAL);
  });
});

describe("listing deployments", () => {
  it("parses no stored record the host already holds", async () => {
    // Records of some size: a string default of 100,000 characters each.
    const wide = structuredClone(REAL);
    wide.schema.tables.t.fields.d.default = "y".repeat(100_000);
    for (const id of ["wide1", "wide2", "wide3"])
      expect((await host.deployCode(id, forged(wide))).status).toBe(201);
    const parse = vi.spyOn(JSON, "parse");
    try {
      for (let i = 0; i < 3; i++) {
        const listed = await host.admin("/v1/deploys", "GET");
        expect(listed.status).toBe(200);
      }
      const recordsParsed = parse.mock.calls.filter(
        ([text]) => typeof text === "string" && text.length > 100_000 && text.includes('"artifact"'),
      );
      expect(recordsParsed).toEqual([]);
    } finally {
      parse.mockRestore();
    }
  });

  it("shows a list for people without what each developer declares, and refuses a view it has not", async () => {
    // The operator's first page downloaded every deployment's handler names, env names and
    // approved emails (up to megabytes each, 100 deployments a developer) at each load.
    const wide = structuredClone(REAL) as typeof REAL & { queries: string[] };
    wide.queries = Array.from({ length: 900 }, (_, i) => `query${i}`.padEnd(60, "x"));
    expect((await host.deployCode("declares", forged(wide))).status).toBe(201);
    const full = await host.admin("/v1/deploys", "GET");
    const summary = await host.admin("/v1/deploys?view=summary", "GET");
    expect(summary.status, summary.text()).toBe(200);
    const listed = summary.json<{ deploys: Array<Record<string, unknown>> }>().deploys;
    expect(listed.find((d) => d.id === "declares")).toEqual({
      id: "declares",
      apiVersion: 1,
      owner: null,
      ownerName: null,
      ownerEmail: null,
      claimed: false,
      restricted: false,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(summary.text().length * 20).toBeLessThan(full.text().length);
    const unknown = await host.admin("/v1/deploys?view=everything", "GET");
    expect([unknown.status, unknown.json<{ error: { code: string } }>().error.code]).toEqual([
      400,
      "bad_request",
    ]);
  });
});
