/** An endpoint's answer: only its bounded head is parsed; what the runtime could not have made fails clearly. */
import { describe, expect, it } from "vitest";
import { ENDPOINT_HEAD_CHARS, encodeEndpointAnswer, LIMITS } from "../../sdk/protocol/index.js";
import { readEndpointAnswer } from "./endpoint-answer.js";

const failure = (answer: string) => {
  try {
    readEndpointAnswer(answer, "api");
  } catch (error) {
    return { code: (error as { code?: string }).code, message: (error as Error).message };
  }
  return undefined;
};

describe("readEndpointAnswer", () => {
  it("hands the body back as the handler built it, line feeds and control characters included", () => {
    const body = `\n{"not":"parsed"\n${"\u0001".repeat(1000)}`;
    const answer = readEndpointAnswer(
      encodeEndpointAnswer('{"status":201,"headers":{"x":"y"}}', body),
      "api",
    );
    expect(answer).toEqual({ head: { status: 201, headers: { x: "y" } }, body });
  });

  it("reads the largest head headers within the limits can make", () => {
    const value = "\u0001".repeat(LIMITS.endpointResponseHeaderChars - 1);
    const head = JSON.stringify({ status: 200, headers: { a: value } });
    expect(head.length).toBeLessThan(ENDPOINT_HEAD_CHARS);
    expect(readEndpointAnswer(encodeEndpointAnswer(head, "ok"), "api").head.headers).toEqual({ a: value });
  });

  it("refuses, as the handler's error, an answer with no head, a head past the bound or not an object", () => {
    expect(failure("x".repeat(8 * 1024 * 1024))).toEqual({
      code: "handler_error",
      message: expect.stringContaining("Endpoint api answered something other than json(...) or text(...)"),
    });
    expect(failure(`{"status":200,"headers":{"a":"${"b".repeat(ENDPOINT_HEAD_CHARS)}"}}\nbody`)?.code).toBe(
      "handler_error",
    );
    for (const head of ["null", "[1]", "{broken", "7"])
      expect(failure(`${head}\nbody`)).toEqual({
        code: "handler_error",
        message: "Endpoint api answered a head that is not a JSON object.",
      });
    expect(failure(`${"[".repeat(10_000)}\nbody`)?.code).toBe("handler_error");
  });
});
