/** The SVG and XML script check on its own thread: answers, a check that runs too long, a full queue. */
import { describe, expect, it } from "vitest";
import { MarkupChecker } from "./markup-checker.js";

const svg = (body: string) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${body}</svg>`);

describe("the markup checker", () => {
  it("answers on its thread why markup can run script, in the order files came", async () => {
    const checker = new MarkupChecker();
    const answers = await Promise.all([
      checker.scriptReason(svg("<rect/>")),
      checker.scriptReason(svg("<script>alert(1)</script>")),
      checker.scriptReason(svg('<a href="javascript:alert(1)"/>')),
    ]);
    expect(answers).toEqual([undefined, "a <script> element", "a javascript: URL"]);
  });

  it("fails a check that runs past its time with 503, and checks the next file on a new thread", async () => {
    // The timer fires on the main thread while the thread scans 4 MB: the main thread is free.
    const checker = new MarkupChecker({
      jobMs: 1,
      queueBytes: 64 * 1024 * 1024,
      queueBytesEach: 64 * 1024 * 1024,
    });
    const slow = checker.scriptReason(Buffer.from("<svg a='1'>".repeat(400_000)));
    await expect(slow).rejects.toMatchObject({ code: "unavailable" });
    const patient = new MarkupChecker();
    expect(await patient.scriptReason(svg("<script/>"))).toBe("a <script> element");
  });

  it("refuses files past the bytes that may wait, in all and in one queue, with 503", async () => {
    const checker = new MarkupChecker({ jobMs: 30_000, queueBytes: 200, queueBytesEach: 100 });
    await expect(checker.scriptReason(Buffer.alloc(101, 0x3c), "a")).rejects.toMatchObject({
      code: "unavailable",
    });
    expect(checker.hasRoom(100, "a")).toBe(true);
    expect(await checker.scriptReason(svg(""), "b")).toBeUndefined();
  });

  it("takes the queues in turns: one deployment's files delay another's by one each", async () => {
    const checker = new MarkupChecker();
    const order: string[] = [];
    const check = (name: string, queue: string) =>
      checker.scriptReason(svg(`<text>${name}</text>`), queue).then(() => order.push(name));
    await Promise.all([check("a1", "a"), check("a2", "a"), check("a3", "a"), check("b1", "b")]);
    expect(order).toEqual(["a1", "a2", "b1", "a3"]);
  });
});
