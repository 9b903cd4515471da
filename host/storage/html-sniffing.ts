import { computedMIMEType } from "whatwg-mimetype";
import { decodeText, type TextEncoding } from "./text-encoding.js";

/** How much of a file's start the sniffing reads (the WHATWG resource header is 1445 bytes). */
const SNIFFED_LENGTH = 4096;

/** Tags that open a whole page: refused even in Markdown. */
const PAGE_TAGS = ["!doctype html", "html", "head", "body", "script", "iframe", "frameset"];
/**
 * Tags of the WHATWG signatures that also open HTML fragments (and a few more that browsers other
 * than the standard's sniff): a page everywhere but in Markdown.
 */
const FRAGMENT_TAGS = ["h1", "div", "font", "table", "a", "style", "title", "b", "br", "p", "img", "meta"];
const FRAGMENT_TAGS_PLUS = [...FRAGMENT_TAGS, "object", "embed"];

/** `<tag` followed by a byte that ends a tag name (the standard's space and `>`, and also `/` and whitespace). */
const opensWith = (tags: string[]) => new RegExp(`^<(?:${tags.join("|")})[\\s/>]`, "i");
const OPENS_PAGE = opensWith(PAGE_TAGS);
const OPENS_FRAGMENT = opensWith(FRAGMENT_TAGS_PLUS);
/** The start of an XML or SVG document, which the markup check reads instead. */
const OPENS_XML = /^<(?:\?xml[\s?]|svg[\s/>]|!doctype\s+svg[\s>])/i;
const LEADING_COMMENTS = /^(?:\s*<!--[\s\S]*?-->)*\s*/;

/** Where a file's text stands once leading whitespace and comments are skipped. */
export interface LeadingMarkup {
  /** The text after leading whitespace and comments (its first few KiB), or "" when that is all there is. */
  rest: string;
  /** True when the text opens with a comment. */
  commented: boolean;
}

/** The decoded start of a file with its leading whitespace and comments skipped. */
export function leadingMarkup(bytes: Uint8Array, encoding: TextEncoding): LeadingMarkup {
  const text = decodeText(bytes, encoding, SNIFFED_LENGTH).replace(/^[\s\f]+/, "");
  const skipped = LEADING_COMMENTS.exec(text)?.[0].length ?? 0;
  return { rest: text.slice(skipped), commented: text.startsWith("<!--") };
}

/** True when the text that follows leading comments is an XML or SVG document. */
export function opensAsXml(start: LeadingMarkup): boolean {
  return OPENS_XML.test(start.rest);
}

/** True when the WHATWG "unknown MIME type" rules, run on `bytes` as a browser would, say HTML. */
function browserSniffsHtml(bytes: Uint8Array): boolean {
  return computedMIMEType(bytes.subarray(0, SNIFFED_LENGTH)).essence === "text/html";
}

/**
 * True when a browser sniffing the file would take it for an HTML page: the WHATWG signatures
 * (`<!DOCTYPE HTML`, `<HTML`, `<SCRIPT`, `<P`, `<!--`...) after leading whitespace, read on the
 * raw bytes as the standard does, and on the text decoded from UTF-8 or UTF-16 with or without a byte
 * order mark past any leading comments (where the standard gives up, or a comment hides the page). In Markdown, whose text may open with fragments such as
 * `<p align="center">` or a comment, only tags that open a whole page count.
 */
export function sniffsAsHtml(bytes: Uint8Array, start: LeadingMarkup, markdown: boolean): boolean {
  if (opensAsXml(start)) return false;
  if (OPENS_PAGE.test(start.rest)) return true;
  if (markdown) return false;
  if (OPENS_FRAGMENT.test(start.rest)) return true;
  if (start.commented) return true;
  return browserSniffsHtml(bytes);
}
