/**
 * An archive's object records are shown to developers as they are (`platform storage list`, the
 * dashboard): a type or uploader holding escape codes reached their terminals.
 */
import { describe, expect, it } from "vitest";
import { checkArchivedObject } from "./object-transfer.js";

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

  it("is refused when its type or uploader holds control characters, or an uploader is overlong", () => {
    for (const bad of [
      { contentType: "text/plain\u001b]52;c;aGk=\u0007" },
      { contentType: "text/plain\u009b2K" },
      { uploaderEmail: "\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007" },
      { uploaderId: "user:\u202eevil" },
      { uploaderId: "u".repeat(321) },
    ])
      expect(() => checkArchivedObject({ ...valid, ...bad }, "objects.ndjson line 1", 3)).toThrow(
        expect.objectContaining({ code: "bad_request" }),
      );
  });
});
