import { fileTypeFromBuffer } from "file-type";
import { isMarkdownType } from "./blocked-declared-types.js";
import { inlineContentType } from "./download-type.js";
import { leadingMarkup, opensAsXml, sniffsAsHtml } from "./html-sniffing.js";
import { markupChecker } from "./markup-checker.js";
import { textEncodingOf } from "./text-encoding.js";
import { ZIP_LOCAL_HEADER, zipType } from "./zip-entries.js";

/** The declared-type check, next to the content check it comes before. */
export { isBlockedDeclaredType } from "./blocked-declared-types.js";

/** Types detected from leading bytes by file-type that are refused whatever was declared. */
const BLOCKED_DETECTED_EXTENSIONS = new Set([
  "exe",
  "elf",
  "macho",
  "class",
  "msi",
  "apk",
  "dmg",
  "deb",
  "rpm",
  "jar",
  "wasm",
  "swf",
  "crx",
  "xpi",
  "lnk",
  "chm",
]);

const MAGIC: Array<[string, number[]]> = [
  ["a Windows PE executable", [0x4d, 0x5a]],
  ["an ELF executable", [0x7f, 0x45, 0x4c, 0x46]],
  ["a Mach-O executable", [0xfe, 0xed, 0xfa, 0xce]],
  ["a Mach-O executable", [0xfe, 0xed, 0xfa, 0xcf]],
  ["a Mach-O executable", [0xce, 0xfa, 0xed, 0xfe]],
  ["a Mach-O executable", [0xcf, 0xfa, 0xed, 0xfe]],
  ["a fat Mach-O executable or Java class file", [0xca, 0xfe, 0xba, 0xbe]],
  ["a fat Mach-O executable", [0xca, 0xfe, 0xba, 0xbf]],
];

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, i) => bytes[i] === byte);
}

/**
 * The type file-type detects from the leading bytes, or undefined; a zip's from its entries'
 * names alone (zip-entries.ts: file-type would unpack some of them whole).
 */
async function detectedType(bytes: Uint8Array): Promise<{ ext: string; mime: string } | undefined> {
  if (startsWith(bytes, ZIP_LOCAL_HEADER)) return zipType(bytes);
  // file-type throws on truncated or odd containers; what it cannot parse it did not detect.
  return fileTypeFromBuffer(bytes).catch(() => undefined);
}

/** Detected types a web app's client build may hold although uploads refuse them (see {@link executableReason}). */
const CLIENT_ALLOWED_DETECTED = new Set(["wasm"]);

/**
 * Why these bytes are a native executable, installer or package (a Windows PE, ELF, Mach-O, Java
 * class or archive, Flash, browser extension...), or undefined. Deployed client files are checked
 * with this alone: HTML, JavaScript, SVG and WebAssembly are what a web app is made of, but nothing
 * at a deployment's origin needs to hand visitors a program to run outside the browser.
 */
export async function executableReason(bytes: Uint8Array): Promise<string | undefined> {
  for (const [what, magic] of MAGIC) if (startsWith(bytes, magic)) return `the file is ${what}`;
  const detected = await detectedType(bytes);
  if (detected && BLOCKED_DETECTED_EXTENSIONS.has(detected.ext) && !CLIENT_ALLOWED_DETECTED.has(detected.ext))
    return `the file is ${detected.mime}`;
  return undefined;
}

/**
 * Why markup must not be stored: an HTML page as a browser would sniff it, or SVG/XML that can run
 * script. Markdown may open with HTML fragments (it is served as Markdown, never sniffed). A file
 * that will be served inline as SVG (`servedAsSvg`) is checked for script however it begins: XML
 * may put any amount of whitespace before its root element, past what the sniffing reads.
 */
async function markupReason(
  bytes: Uint8Array,
  markdown: boolean,
  servedAsSvg: boolean,
  queue: string,
): Promise<string | undefined> {
  const encoding = textEncodingOf(bytes);
  // Without an encoding the file is XML declaring one that cannot be read: the markup check says so.
  if (encoding) {
    const start = leadingMarkup(bytes, encoding);
    if (start.rest.startsWith("#!")) return "the file is a script (it starts with #!)";
    if (sniffsAsHtml(bytes, start, markdown)) {
      return "the file is an HTML document (a browser would open it as a page); upload it inside a .zip archive instead";
    }
    if (!servedAsSvg && (!start.rest.startsWith("<") || (markdown && !opensAsXml(start)))) return undefined;
  }
  const script = await markupChecker.scriptReason(bytes, queue);
  return script && `the SVG or XML document can run script (${script}); remove it, or upload a PNG instead`;
}

/**
 * Why these bytes must not be stored, or undefined when they may. Looks at the leading bytes with
 * file-type and with our own checks for what it does not detect (shebang scripts, HTML as browsers
 * sniff it, thin and fat Mach-O, Java class files) and at SVG or XML that could run script, whatever
 * the declared type (`declaredType` lets Markdown open with HTML fragments, and has a file served
 * as SVG checked for script however it begins). `queue`: whose turn the script check takes (the
 * deployment's: see markup-checker.ts).
 */
export async function blockedContentReason(
  bytes: Uint8Array,
  declaredType = "application/octet-stream",
  queue = "",
): Promise<string | undefined> {
  for (const [what, magic] of MAGIC) if (startsWith(bytes, magic)) return `the file is ${what}`;
  const servedAsSvg = inlineContentType(declaredType) === "image/svg+xml";
  const markup = await markupReason(bytes, isMarkdownType(declaredType), servedAsSvg, queue);
  if (markup) return markup;
  const detected = await detectedType(bytes);
  if (detected && BLOCKED_DETECTED_EXTENSIONS.has(detected.ext)) return `the file is ${detected.mime}`;
  return undefined;
}
