import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { handlerError } from "./dispatch.js";

describe("a handler's failure as the host takes it", () => {
  it("keeps a platform code, and makes any other handler_error (the isolate runs the capsule's code)", () => {
    expect(handlerError({ code: "not_found", message: "gone" }, {}).code).toBe("not_found");
    for (const code of ["zz-made-up", "__proto__", "toString", "x".repeat(10_000), 7 as unknown as string])
      expect(handlerError({ code, message: "forged" }, {}).code).toBe("handler_error");
  });

  it("cuts the message and takes the deployment's env values out of it", () => {
    const failed = handlerError(
      { code: "handler_error", message: `key s3cret ${"y".repeat(10_000)}` },
      {
        KEY: "s3cret",
      },
    );
    expect(failed.message.startsWith("key [redacted] yyy")).toBe(true);
    expect(failed.message.length).toBeLessThanOrEqual(LIMITS.errorMessageChars);
  });
});
