/**
 * An archive's object records are shown to developers as they are (`platform storage list`, the
 * dashboard): a type or uploader holding escape codes reached their terminals. Such a record is
 * taken with the text made plain, not refused: exports made before still import.
 */
import { describe, expect, it } from "vitest";
import { checkArchivedObject } from "./archived-object.js";

const valid = {
  key: `public/${"a".repeat(22)}`,
  size: 3,
  contentType: "image/png",
  uploaderId: "user:abc",
  uploaderEmail: "ada@example.com",
  uploadedAt: 1,
};

describe("an archive's object record", () => {
  it("is taken when its type and uploader are plain text", () => {
    expect(checkArchivedObject(valid, "objects.ndjson line 1", 3)).toMatchObject({
      contentType: "image/png",
    });
  });

  it("keeps a type or uploader holding control characters as plain text, so that old exports still import", () => {
    const taken = (bad: Record<string, unknown>) =>
      checkArchivedObject({ ...valid, ...bad }, "objects.ndjson line 1", 3);
    expect(taken({ contentType: "text/plain\u001b]52;c;aGk=\u0007" }).contentType).toBe(
      "application/octet-stream",
    );
    expect(taken({ contentType: "text/plain\u009b2K" }).contentType).toBe("application/octet-stream");
    expect(taken({ contentType: `image/${"x".repeat(300)}` }).contentType).toBe("application/octet-stream");
    expect(taken({ uploaderEmail: "\u001b]8;;https://evil.example/\u0007click" }).uploaderEmail).toBeNull();
    expect(taken({ uploaderId: "user:\u202eevil" }).uploaderId).toBe("user:\\u202eevil");
    expect(taken({ uploaderId: "u".repeat(400) }).uploaderId).toHaveLength(320);
  });
});
