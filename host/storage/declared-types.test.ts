import { describe, expect, it } from "vitest";
import { isBlockedDeclaredType } from "./blocked-declared-types.js";
import { parseDeclaredType } from "./content-type-header.js";
import { downloadType, inlineContentType } from "./download-type.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";

const WHATWG_JAVASCRIPT = [
  "application/ecmascript",
  "application/javascript",
  "application/x-ecmascript",
  "application/x-javascript",
  "text/ecmascript",
  "text/javascript",
  "text/javascript1.0",
  "text/javascript1.1",
  "text/javascript1.2",
  "text/javascript1.3",
  "text/javascript1.4",
  "text/javascript1.5",
  "text/jscript",
  "text/livescript",
  "text/x-ecmascript",
  "text/x-javascript",
];

const EXECUTABLES_AND_SCRIPTS = [
  "text/x-python",
  "text/x-sh",
  "application/x-sh",
  "application/x-ms-dos-executable",
  "application/x-msdownload",
  "application/vnd.microsoft.portable-executable",
  "application/java-archive",
  "application/x-msi",
  "application/vnd.debian.binary-package",
  "application/x-rpm",
  "application/x-apple-diskimage",
  "text/x-perl",
  "application/x-php",
  "application/x-httpd-php",
  "text/x-script.python",
  "application/wasm",
];

describe("declared types", () => {
  it.each([
    ...WHATWG_JAVASCRIPT,
    ...EXECUTABLES_AND_SCRIPTS,
    "text/html",
    "application/xhtml+xml",
    "text/x-html",
    "application/javascript+module",
  ])("refuses %s", (type) => {
    expect(isBlockedDeclaredType(type)).toBe(true);
  });

  it("reads types as browsers do: case, parameters, whitespace, lists and quoted commas", () => {
    for (const type of [
      " TEXT/HTML ",
      "Text/Html;charset=utf-8",
      'text/html ;\tcharset="utf-8"',
      "text/javascript; type=module",
      "image/png, text/html",
      'text/plain;a="x,y", text/html',
      "image/png,application/xhtml+xml",
      "text/html, */*",
    ]) {
      expect(isBlockedDeclaredType(type), type).toBe(true);
    }
  });

  it("accepts the types of benign files, and treats a type that does not parse as application/octet-stream", () => {
    for (const type of [
      "image/png",
      "image/svg+xml",
      "application/pdf",
      "application/zip",
      "application/gzip",
      "application/x-tar",
      "text/csv",
      "text/markdown; charset=UTF-8",
      "application/json",
      "text/plain;charset=utf-8",
      "application/xml",
      "image/x-custom",
      "",
      "garbage",
      "text/",
      "/html",
    ]) {
      expect(isBlockedDeclaredType(type), type).toBe(false);
    }
    expect(parseDeclaredType("garbage").effective).toBeNull();
    expect(inlineContentType("garbage")).toBeUndefined();
  });

  it("takes the last valid type of a list, as Fetch does", () => {
    expect(parseDeclaredType("text/plain;charset=gbk, text/plain").effective?.toString()).toBe(
      "text/plain;charset=gbk",
    );
    expect(parseDeclaredType("text/plain, image/png, nonsense").effective?.essence).toBe("image/png");
  });
});

describe("downloads", () => {
  it("serves allowlisted types inline, normalised, keeping only a text charset", () => {
    expect(downloadType("IMAGE/PNG; foo=bar", undefined)).toEqual({
      contentType: "image/png",
      attachment: false,
    });
    expect(downloadType('text/plain; charset="UTF-8"', undefined)).toEqual({
      contentType: "text/plain;charset=UTF-8",
      attachment: false,
    });
    expect(downloadType('text/plain; charset="a b"', undefined).contentType).toBe("text/plain");
    expect(downloadType("image/svg+xml; charset=utf-16", MARKUP_RULES_VERSION)).toEqual({
      contentType: "image/svg+xml",
      attachment: false,
    });
  });

  it("serves everything else, and SVG not checked under today's rules, as an octet-stream attachment", () => {
    const attachment = { contentType: "application/octet-stream", attachment: true };
    for (const type of [
      "application/zip",
      "application/xml",
      "text/html",
      "image/x-custom",
      "nonsense",
      "image/png, text/html",
    ]) {
      expect(downloadType(type, MARKUP_RULES_VERSION), type).toEqual(attachment);
    }
    // An SVG whose bytes passed under older rules (or none kept) is checked again before it is
    // served inline (ObjectService.download); unchecked, it is an attachment.
    expect(downloadType("image/svg+xml", undefined)).toEqual(attachment);
    expect(downloadType("image/svg+xml", MARKUP_RULES_VERSION - 1)).toEqual(attachment);
  });
});
