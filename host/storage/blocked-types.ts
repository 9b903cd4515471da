import { fileTypeFromBuffer } from "file-type";

/**
 * Declared types refused at upload (`415 blocked_type` in the public contract): executables, installers, scripts,
 * HTML and JavaScript. Compared without parameters, case-insensitively.
 */
export const BLOCKED_DECLARED_TYPES: ReadonlySet<string> = new Set([
  "application/x-msdownload",
  "application/x-msdos-program",
  "application/vnd.microsoft.portable-executable",
  "application/x-dosexec",
  "application/x-executable",
  "application/x-elf",
  "application/x-sharedlib",
  "application/x-mach-binary",
  "application/x-msi",
  "application/x-ms-installer",
  "application/x-apple-diskimage",
  "application/vnd.android.package-archive",
  "application/x-debian-package",
  "application/x-rpm",
  "application/java-archive",
  "application/x-java-archive",
  "application/java-vm",
  "application/x-java-class",
  "application/x-sh",
  "application/x-csh",
  "application/x-shellscript",
  "text/x-shellscript",
  "application/x-bat",
  "application/x-msbatch",
  "application/x-powershell",
  "application/x-perl",
  "application/x-python-code",
  "application/x-httpd-php",
  "application/hta",
  "text/html",
  "application/xhtml+xml",
  "text/javascript",
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "text/ecmascript",
  "text/jscript",
  "application/wasm",
]);

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
]);

/** The MIME type without parameters, lower-cased. */
export function baseMimeType(contentType: string): string {
  return contentType.split(";")[0]?.trim().toLowerCase() ?? "";
}

/** True when the declared type is one the platform refuses. */
export function isBlockedDeclaredType(contentType: string): boolean {
  return BLOCKED_DECLARED_TYPES.has(baseMimeType(contentType));
}

/** True when an object stored with this type must be served as an attachment (HTML or JavaScript). */
export function mustDownloadAsAttachment(contentType: string): boolean {
  const base = baseMimeType(contentType);
  return (
    base === "text/html" ||
    base === "application/xhtml+xml" ||
    base.includes("javascript") ||
    base.includes("ecmascript")
  );
}

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

const HTML_STARTS = [
  "<!doctype html",
  "<html",
  "<head",
  "<body",
  "<script",
  "<iframe",
  "<meta",
  "<title",
  "<frameset",
  "<object",
  "<embed",
];

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, i) => bytes[i] === byte);
}

/** The text at the start, without a UTF-8 BOM or leading whitespace, lower-cased (latin1 view). */
function leadingText(bytes: Uint8Array, length = 2048): string {
  let start = 0;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
  return Buffer.from(bytes.subarray(start, start + length))
    .toString("latin1")
    .trimStart()
    .toLowerCase();
}

/** SVG or XML that can run script: `<script`, `on...=` handlers, `javascript:` URLs, foreignObject HTML. */
function scriptableSvg(bytes: Uint8Array): boolean {
  const text = Buffer.from(bytes).toString("latin1").toLowerCase();
  if (!text.includes("<svg")) return false;
  return /<script\b|\son[a-z]+\s*=|javascript:|<foreignobject\b/.test(text);
}

/**
 * Why these bytes must not be stored, or undefined when they may. Looks at the leading bytes with
 * file-type and with our own checks for what it does not detect (shebang scripts, HTML documents,
 * thin and fat Mach-O, Java class files) and at SVG that could run script, whatever the declared type.
 */
export async function blockedContentReason(bytes: Uint8Array): Promise<string | undefined> {
  for (const [what, magic] of MAGIC) if (startsWith(bytes, magic)) return `the file is ${what}`;
  const text = leadingText(bytes);
  if (text.startsWith("#!")) return "the file is a script (it starts with #!)";
  if (HTML_STARTS.some((start) => text.startsWith(start))) return "the file is an HTML document";
  if (text.startsWith("<?xml") || text.startsWith("<svg") || text.startsWith("<!doctype svg")) {
    if (scriptableSvg(bytes)) return "the SVG contains script";
    if (/<html\b|<script\b/.test(text)) return "the file is an HTML document";
  }
  // file-type throws on truncated or odd containers; what it cannot parse it did not detect.
  const detected = await fileTypeFromBuffer(bytes).catch(() => undefined);
  if (detected && BLOCKED_DETECTED_EXTENSIONS.has(detected.ext)) return `the file is ${detected.mime}`;
  return undefined;
}
