import { expect, it } from "vitest";
import { DISPATCH_ERROR_CHARS, DISPATCH_ERROR_MESSAGE_CHARS } from "../../sdk/protocol/index.js";
import { readRuntimeAnswer } from "./runtime-answer.js";

const error = (message: string) => `!${JSON.stringify({ code: "bad_request", message })}`;

it("reads an error whose message holds JSON (brackets in strings are not shape)", () => {
  const message = `Refused: ${JSON.stringify({ a: { b: { c: { d: { e: [[[[1]]]] } } } } })}`;
  expect(readRuntimeAnswer(error(message), 1024)).toEqual({
    ok: false,
    error: { code: "bad_request", message },
  });
});

it("refuses an error with more shape than the runtime's three fields, and an answer it could not give", () => {
  const nested = `!${JSON.stringify({ code: "x", message: "m", extra: [[[[[[[[[1]]]]]]]]] })}`;
  expect(readRuntimeAnswer(nested, 1024)).toMatchObject({ ok: false, error: { code: "handler_error" } });
  expect(readRuntimeAnswer(42, 1024)).toBeUndefined();
  expect(readRuntimeAnswer("?what", 1024)).toBeUndefined();
  expect(readRuntimeAnswer(`=${"1".repeat(20)}`, 8)).toMatchObject({
    ok: false,
    error: { code: "too_large" },
  });
  expect(readRuntimeAnswer("=[1,2]", 8)).toEqual({ ok: true, valueJson: "[1,2]" });
});

it("refuses an error longer than the runtime makes one before parsing it (8 Mi characters cost 13.5 ms)", () => {
  const longest = error("\u0001".repeat(DISPATCH_ERROR_MESSAGE_CHARS));
  expect(longest.length).toBeLessThanOrEqual(DISPATCH_ERROR_CHARS);
  expect(readRuntimeAnswer(longest, 8 * 1024 * 1024)).toMatchObject({
    ok: false,
    error: { code: "bad_request" },
  });
  expect(readRuntimeAnswer(error("x".repeat(8 * 1024 * 1024 - 100)), 8 * 1024 * 1024)).toEqual({
    ok: false,
    error: { code: "handler_error", message: "The handler failed with an error the platform cannot read." },
  });
});
