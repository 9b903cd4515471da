import { decodeText, textEncodingOf } from "./text-encoding.js";

/**
 * The version of the rules below. An object's record keeps the version its bytes passed at upload
 * or import, and a download checks again only an object checked under another version (bump it when
 * a rule changes): the check of a 5 MB file takes the host's main thread up to 200 ms.
 */
export const MARKUP_RULES_VERSION = 1;

/** Elements that run script or embed another document (any namespace prefix). */
const ACTIVE_ELEMENT =
  /<(?:[\w.-]+:)?(script|foreignobject|iframe|frame|frameset|embed|object|applet|handler|listener|html|body)[\s/>]/i;
/** Namespaces whose elements a browser runs as HTML or as XML Events. */
const ACTIVE_NAMESPACE = /http:\/\/www\.w3\.org\/(?:1999\/xhtml|2001\/xml-events)/i;
const EVENT_HANDLER = /[\s"'/](?:[\w.-]+:)?on[a-z]+\s*=/i;
const ANIMATED_HANDLER = /attributename\s*=\s*["']\s*(?:[\w.-]+:)?on[a-z]/i;
const USE_ELEMENT = /^<(?:[\w.-]+:)?use[\s/>]/i;
const HREF_VALUE = /[\s"'](?:[\w.-]+:)?href\s*=\s*(?:"([^"]*)"|'([^']*)')/gi;
/** Character references as XML and HTML parsers decode them (numeric ones even without `;`). */
const CHARACTER_REFERENCE = /&#(x[0-9a-f]+|\d+);?|&(colon|tab|newline|lpar|rpar|sol|period);/gi;
const NAMED_REFERENCES: Record<string, string> = {
  colon: ":",
  tab: "\t",
  newline: "\n",
  lpar: "(",
  rpar: ")",
  sol: "/",
  period: ".",
};
/**
 * URL schemes that run script, with anything but letters and digits allowed between the letters (URL
 * parsers drop tabs, newlines and leading control characters).
 */
const SCRIPT_URL = /(?:j\W*a\W*v\W*a|v\W*b|l\W*i\W*v\W*e)\W*s\W*c\W*r\W*i\W*p\W*t\W*:/i;

/** `text` with its character references decoded (built from slices: linear even for millions of them). */
function decodeReferences(text: string): string {
  if (!text.includes("&")) return text;
  const parts: string[] = [];
  let last = 0;
  for (const match of text.matchAll(CHARACTER_REFERENCE)) {
    const [all, code, name] = match;
    let decoded = "";
    if (name) decoded = NAMED_REFERENCES[name.toLowerCase()] ?? "";
    else {
      const point = /^x/i.test(code as string)
        ? Number.parseInt((code as string).slice(1), 16)
        : Number(code);
      if (point > 0 && point <= 0x10ffff) decoded = String.fromCodePoint(point);
    }
    parts.push(text.slice(last, match.index), decoded);
    last = match.index + all.length;
  }
  parts.push(text.slice(last));
  return parts.join("");
}

/**
 * The start tags of `text`, each read whole: a `>` inside a quoted attribute value does not end it.
 * Linear: scanning stops at a quote or tag left open until the end (the parser would stop there too).
 */
function* startTags(text: string): Generator<string> {
  let at = text.indexOf("<");
  while (at >= 0 && at < text.length - 1) {
    if (!/[A-Za-z_]/.test(text[at + 1] as string)) {
      at = text.indexOf("<", at + 1);
      continue;
    }
    let end = at + 1;
    let quote = "";
    for (; end < text.length; end++) {
      const char = text[end];
      if (quote) {
        if (char === quote) quote = "";
      } else if (char === '"' || char === "'") quote = char;
      else if (char === ">" || char === "<") break;
    }
    if (end >= text.length) return;
    if (text[end] === ">") yield text.slice(at, end + 1);
    at = text.indexOf("<", end);
  }
}

/** Why the start tag `tag` can run script, or undefined. */
function activeAttribute(tag: string): string | undefined {
  if (EVENT_HANDLER.test(tag)) return "an on... event handler attribute";
  if (SCRIPT_URL.test(decodeReferences(tag))) return "a javascript: URL";
  if (ANIMATED_HANDLER.test(tag)) return "an animation that sets an event handler";
  if (!USE_ELEMENT.test(tag)) return undefined;
  for (const [, double, single] of tag.matchAll(HREF_VALUE)) {
    if (!(double ?? single ?? "").trim().startsWith("#"))
      return "a <use> element that loads another document";
  }
  return undefined;
}

/**
 * Whether a DOCTYPE of `text` opens an internal subset (a `[` before its `>`). Linear: a regular
 * expression would scan from every `<!doctype` to the end of a text that never closes one (a
 * file of 250 KB of `<!doctype ` held the host's main thread 5 s).
 */
function hasInternalSubset(text: string): boolean {
  const lower = text.toLowerCase();
  let at = lower.indexOf("<!doctype");
  while (at >= 0) {
    let end = at + "<!doctype".length;
    while (end < lower.length && lower[end] !== ">" && lower[end] !== "[") end++;
    if (lower[end] === "[") return true;
    if (end >= lower.length) return false;
    at = lower.indexOf("<!doctype", end);
  }
  return false;
}

/** Why markup text can run script when a browser opens it as SVG or XML, or undefined. */
function scriptIn(text: string): string | undefined {
  const element = ACTIVE_ELEMENT.exec(text);
  if (element) return `a <${element[1]}> element`;
  if (ACTIVE_NAMESPACE.test(text)) return "XHTML or XML Events markup";
  if (/<!entity/i.test(text)) return "an entity declaration";
  // An internal subset's `<!ATTLIST svg onload CDATA "...">` gives elements default attributes
  // that no start tag shows; a file needs no DOCTYPE subset to be a picture.
  if (/<!attlist/i.test(text) || hasInternalSubset(text)) return "a DOCTYPE with an internal subset";
  if (/<\?xml-stylesheet/i.test(text)) return "an xml-stylesheet instruction, which can apply XSLT";
  for (const tag of startTags(text)) {
    const reason = activeAttribute(tag);
    if (reason) return reason;
  }
  return undefined;
}

const ESCAPE = 0x1b;

/**
 * The bytes as Latin-1 text without zero bytes (UTF-16's high halves) and without escape sequences
 * (ISO-2022 switches its character sets with them: `<scr ESC ( B ipt>` reads `<script>`).
 */
function withoutZerosAndEscapes(bytes: Uint8Array): string {
  const kept = Buffer.alloc(bytes.length);
  let length = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (byte === ESCAPE) {
      while (i + 1 < bytes.length && (bytes[i + 1] as number) >= 0x20 && (bytes[i + 1] as number) <= 0x2f)
        i++;
      i++;
    } else if (byte !== 0) kept[length++] = byte;
  }
  return kept.toString("latin1", 0, length);
}

/**
 * Why SVG or XML bytes could run script in a browser, or undefined when they cannot. Reads the text
 * as the browser's XML parser decodes it (byte order mark, UTF-16, the declared encoding, else UTF-8)
 * and once more as raw bytes without zero bytes and escape sequences, so that no encoding hides
 * `<script>`, an `on...=` handler, a `javascript:` URL (character references decoded),
 * `<foreignObject>`, `<iframe>`, `<embed>`, `<object>`, a `<use>` of another document, an
 * `<!ENTITY>`, a DOCTYPE's internal subset (`<!ATTLIST>` defaults) or an XSLT instruction.
 */
export function markupScriptReason(bytes: Uint8Array): string | undefined {
  const encoding = textEncodingOf(bytes);
  if (!encoding) return "it declares a character encoding that cannot be checked; save it as UTF-8";
  return scriptIn(decodeText(bytes, encoding)) ?? scriptIn(withoutZerosAndEscapes(bytes));
}
