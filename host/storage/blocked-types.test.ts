import { describe, expect, it } from "vitest";
import { blockedContentReason, isBlockedDeclaredType } from "./blocked-types.js";
import { mustDownloadAsAttachment } from "./download-type.js";

/** A minimal ZIP local file header for one stored (uncompressed) entry named `name`. */
function zipWith(name: string, content = "hello"): Buffer {
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt32LE(content.length, 18);
  header.writeUInt32LE(content.length, 22);
  header.writeUInt16LE(name.length, 26);
  return Buffer.concat([header, Buffer.from(name), Buffer.from(content)]);
}

const pad = (head: number[] | Buffer, size = 512) => Buffer.concat([Buffer.from(head), Buffer.alloc(size)]);
const text = (s: string) => Buffer.from(s, "utf8");

/** Real leading bytes of each kind, made here (no binaries in the repository). */
const BLOCKED: Array<[string, Buffer]> = [
  ["Windows PE", pad([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00])],
  ["ELF", pad([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00])],
  ["Mach-O 64 little-endian", pad([0xcf, 0xfa, 0xed, 0xfe, 0x07, 0x00, 0x00, 0x01])],
  ["Mach-O 32 big-endian", pad([0xfe, 0xed, 0xfa, 0xce, 0x00, 0x00, 0x00, 0x07])],
  ["fat Mach-O", pad([0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x02, 0x01, 0x00, 0x00, 0x07])],
  ["fat Mach-O 64", pad([0xca, 0xfe, 0xba, 0xbf, 0x00, 0x00, 0x00, 0x02])],
  ["Java class", pad([0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34])],
  ["shebang", text("#!/bin/sh\necho hi\n")],
  ["shebang after BOM", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text("#!/usr/bin/env node\n")])],
  ["HTML doctype", text("<!DOCTYPE html><html><body>hi</body></html>")],
  ["HTML with leading whitespace", text("\n\n   <html><head></head></html>")],
  [
    "HTML upper case after BOM",
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text("<HTML><BODY>x</BODY></HTML>")]),
  ],
  ["bare script tag", text("<script>alert(document.cookie)</script>")],
  ["iframe", text('<iframe src="https://example.com"></iframe>')],
  [
    "SVG with script",
    text('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
  ],
  [
    "SVG with an event handler",
    text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect/></svg>'),
  ],
  [
    "SVG with a javascript: link",
    text('<svg xmlns="http://www.w3.org/2000/svg"><a href="javascript:alert(1)"><rect/></a></svg>'),
  ],
];

const ALLOWED: Array<[string, Buffer]> = [
  [
    "PNG",
    pad([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52]),
  ],
  ["JPEG", pad([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01])],
  ["PDF", text("%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n1 0 obj\n<<>>\nendobj\n")],
  ["ZIP", zipWith("hello.txt")],
  [
    "plain SVG",
    text(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
    ),
  ],
  ["plain text mentioning html", text("notes about <html> tags and #! lines")],
  ["JSON", text('{"a":1}')],
];

describe("blocked content", () => {
  it.each(BLOCKED)("blocks %s", async (_name, bytes) => {
    expect(await blockedContentReason(bytes)).toBeTypeOf("string");
  });

  it.each(ALLOWED)("allows %s", async (_name, bytes) => {
    expect(await blockedContentReason(bytes)).toBeUndefined();
  });

  it("blocks declared executable, installer, script, HTML and JavaScript types, with parameters and any case", () => {
    for (const type of [
      "application/x-msdownload",
      "application/java-archive",
      "text/html",
      "text/html; charset=utf-8",
      "TEXT/JAVASCRIPT",
      "application/x-sh",
    ]) {
      expect(isBlockedDeclaredType(type), type).toBe(true);
    }
    for (const type of [
      "image/png",
      "image/svg+xml",
      "application/pdf",
      "application/zip",
      "text/plain",
      "application/json",
    ]) {
      expect(isBlockedDeclaredType(type), type).toBe(false);
    }
  });

  it("marks HTML and JavaScript types for download as attachments", () => {
    expect(mustDownloadAsAttachment("text/html; charset=utf-8")).toBe(true);
    expect(mustDownloadAsAttachment("application/javascript")).toBe(true);
    expect(mustDownloadAsAttachment("image/svg+xml")).toBe(false);
  });
});
