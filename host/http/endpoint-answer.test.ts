/** An endpoint's answer: only its bounded head is parsed; what the runtime could not have made fails clearly. */
import { validateHeaderName, validateHeaderValue } from "node:http";
import { describe, expect, it } from "vitest";
import { ENDPOINT_HEAD_CHARS, encodeEndpointAnswer, endpointHead, LIMITS } from "../../sdk/protocol/index.js";
import { readEndpointAnswer } from "./endpoint-answer.js";

const failure = (answer: string) => {
  try {
    readEndpointAnswer(answer, "api");
  } catch (error) {
    return { code: (error as { code?: string }).code, message: (error as Error).message };
  }
  return undefined;
};

const NOT_AN_ANSWER = {
  code: "handler_error",
  message: "Endpoint api answered something other than json(...) or text(...) from platform/server.",
};

describe("readEndpointAnswer", () => {
  it("hands the body back as the handler built it, line feeds and control characters included", () => {
    const body = `\n{"not":"parsed"\n${"\u0001".repeat(1000)}`;
    const answer = readEndpointAnswer(
      encodeEndpointAnswer('{"status":201,"headers":{"x":"y"}}', body),
      "api",
    );
    expect(answer).toEqual({ head: { status: 201, headers: [["x", "y"]] }, body });
  });

  it("reads the largest head headers within the limits can make", () => {
    const value = '"\\'.repeat(LIMITS.endpointResponseHeaderChars / 2 - 1);
    const head = JSON.stringify({ status: 200, headers: { a: value } });
    expect(head.length).toBeLessThan(ENDPOINT_HEAD_CHARS);
    expect(readEndpointAnswer(encodeEndpointAnswer(head, "ok"), "api").head.headers).toEqual([["a", value]]);
  });

  it("refuses an answer with no head, a head past the bound, or more shape than the runtime makes, before parsing it", () => {
    expect(failure("x".repeat(8 * 1024 * 1024))).toEqual(NOT_AN_ANSWER);
    expect(failure(`{"status":200,"headers":{"a":"${"b".repeat(ENDPOINT_HEAD_CHARS)}"}}\nbody`)).toEqual(
      NOT_AN_ANSWER,
    );
    // Many members and deep nesting both fit the length bound, and arrays the runtime never makes.
    const members = Array.from({ length: 3_000 }, (_, i) => `"m${i}":0`).join(",");
    expect(members.length).toBeLessThan(ENDPOINT_HEAD_CHARS);
    expect(failure(`{"status":200,${members}}\n`)).toEqual(NOT_AN_ANSWER);
    const nested = `{"status":200,"headers":{"a":${"[".repeat(30_000)}}}\n`;
    const array = `{"status":200,"headers":[${'"",'.repeat(10_000)}""]}\n`;
    for (const head of [nested, array]) {
      expect(head.length).toBeLessThan(ENDPOINT_HEAD_CHARS);
      expect(failure(head)).toEqual(NOT_AN_ANSWER);
    }
    expect(failure(`{"status":200,"headers":{"a":[[]]}}\n`)).toEqual(NOT_AN_ANSWER);
    for (const head of ["null", "{broken", "7"])
      expect(failure(`${head}\nbody`)).toEqual({
        code: "handler_error",
        message: "Endpoint api answered a head that is not a JSON object.",
      });
  });

  it("refuses headers that are not an object at once: a string of 30,000 characters is not 30,000 headers", () => {
    for (const headers of [`"${"x".repeat(30_000)}"`, "7", "true"])
      expect(failure(`{"status":200,"headers":${headers}}\nbody`)).toEqual({
        code: "handler_error",
        message: "Endpoint api returned headers that are not an object of names to text values.",
      });
  });

  it("checks the head as the runtime did: status, reserved and invalid headers, the platform's cookie", () => {
    const head = (value: object) => encodeEndpointAnswer(JSON.stringify(value), "");
    expect(failure(head({ status: 99 }))?.message).toBe(
      "Endpoint api returned an invalid status 99; a status is a whole number from 200 to 599.",
    );
    expect(failure(head({ status: "200" }))?.message).toContain('invalid status "200"');
    const sent = readEndpointAnswer(
      head({ status: 200, headers: { "content-length": "1", "x-accel-redirect": "/x", "x-ok": "1", n: 5 } }),
      "api",
    );
    expect(sent.head.headers).toEqual([["x-ok", "1"]]);
    expect(failure(head({ status: 200, headers: { "bad name": "v" } }))?.message).toContain('"bad name"');
    expect(failure(head({ status: 200, headers: { "set-cookie": "__Host-platform_session=x" } }))?.code).toBe(
      "handler_error",
    );
    const tooMany = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`x-${i}`, "v"]));
    expect(failure(head({ status: 200, headers: tooMany }))?.message).toBe(NOT_AN_ANSWER.message);
  });

  it("counts headers as JSON keeps them: undefined, functions and symbols are not headers", () => {
    const headers: Record<string, unknown> = Object.fromEntries(
      Array.from({ length: LIMITS.endpointResponseHeaders }, (_, i) => [`x-${i}`, "v"]),
    );
    Object.assign(headers, { "x-undefined": undefined, "x-function": () => 1 });
    expect(endpointHead(200, headers, "api").headers).toHaveLength(LIMITS.endpointResponseHeaders);
  });
});

describe("the header rules match Node's HTTP server (a header they pass must not fail in setHeader)", () => {
  const accepted = (name: string, value: string) => {
    try {
      return endpointHead(200, { [name]: value }, "api").headers.length === 1;
    } catch {
      return false;
    }
  };
  const nodeAccepts = (name: string, value: string) => {
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
      return true;
    } catch {
      return false;
    }
  };
  it("on every UTF-16 code unit, in a name and in a value", () => {
    for (let code = 0; code < 0x10000; code++) {
      const char = String.fromCharCode(code);
      // CR and LF in values are dropped by the platform, not refused; Node refuses them.
      if (char === "\r" || char === "\n") continue;
      expect(accepted(`x${char}`, "v"), `name ${code}`).toBe(nodeAccepts(`x${char}`, "v"));
      expect(accepted("x-v", `a${char}b`), `value ${code}`).toBe(nodeAccepts("x-v", `a${char}b`));
    }
    expect(accepted("", "v")).toBe(false);
    expect(accepted("x-empty", "")).toBe(nodeAccepts("x-empty", ""));
  });
});
