import { describe, expect, it } from "vitest";
import type { Transaction } from "../db/index.js";
import { transactionSyscalls } from "./syscalls.js";

describe("transactionSyscalls", () => {
  it("refuses a call it does not know, naming it (the runtime never sends one; the host checks anyway)", () => {
    const serve = transactionSyscalls({} as Transaction, () => {});
    expect(() => serve("v1.fs.read", {})).toThrow(
      expect.objectContaining({ code: "bad_request", message: 'Unknown platform call "v1.fs.read".' }),
    );
  });
});
