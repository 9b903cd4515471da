import type { MIMEType } from "whatwg-mimetype";
import { parseDeclaredType } from "./content-type-header.js";

/**
 * The JavaScript MIME type essences of the WHATWG MIME Sniffing standard, legacy ones included:
 * a browser runs a script served with any of them.
 */
const JAVASCRIPT_ESSENCES = [
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

/** Other code a browser or a runtime loads as a module or script: WebAssembly, JSX, TypeScript, VBScript... */
const OTHER_CODE_ESSENCES = [
  "application/wasm",
  "application/node",
  "text/jsx",
  "text/babel",
  "text/typescript",
  "application/typescript",
  "application/x-typescript",
  "text/coffeescript",
  "application/vnd.coffeescript",
  "text/vbscript",
  "text/vbs",
  "application/x-vbscript",
  "application/hta",
  "text/x-component",
  "text/x-scriptlet",
  "application/x-chm",
  "application/vnd.ms-htmlhelp",
];

/** Executables and installers of every common system. */
const EXECUTABLE_ESSENCES = [
  "application/x-msdownload",
  "application/x-msdos-program",
  "application/x-ms-dos-executable",
  "application/vnd.microsoft.portable-executable",
  "application/x-dosexec",
  "application/x-executable",
  "application/x-pie-executable",
  "application/x-elf",
  "application/x-sharedlib",
  "application/x-mach-binary",
  "application/x-mach-o-executable",
  "application/x-ms-shortcut",
  "application/x-ms-application",
  "application/x-msi",
  "application/x-ms-installer",
  "application/msix",
  "application/appx",
  "application/x-apple-diskimage",
  "application/x-apple-aspen-config",
  "application/vnd.android.package-archive",
  "application/vnd.debian.binary-package",
  "application/x-debian-package",
  "application/x-deb",
  "application/x-rpm",
  "application/x-redhat-package-manager",
  "application/java-archive",
  "application/x-java-archive",
  "application/java-vm",
  "application/x-java-class",
  "application/x-java-jnlp-file",
  "application/x-xpinstall",
  "application/x-chrome-extension",
  "application/x-shockwave-flash",
  "application/vnd.adobe.flash.movie",
];

/** Scripts of shells and interpreters. */
const SCRIPT_ESSENCES = [
  "application/x-sh",
  "text/x-sh",
  "application/x-csh",
  "text/x-csh",
  "application/x-shellscript",
  "text/x-shellscript",
  "application/x-bat",
  "application/bat",
  "application/x-msbatch",
  "text/x-bat",
  "application/x-powershell",
  "text/x-powershell",
  "application/x-perl",
  "text/x-perl",
  "text/x-perl-script",
  "application/x-python",
  "application/x-python-code",
  "text/x-python",
  "text/x-python3",
  "application/x-ruby",
  "text/x-ruby",
  "application/x-php",
  "application/php",
  "text/x-php",
  "text/php",
  "application/x-tcl",
  "text/x-tcl",
  "application/x-lua",
  "text/x-lua",
  "application/x-awk",
];

const BLOCKED_ESSENCES: ReadonlySet<string> = new Set([
  ...JAVASCRIPT_ESSENCES,
  ...OTHER_CODE_ESSENCES,
  ...EXECUTABLE_ESSENCES,
  ...SCRIPT_ESSENCES,
]);

/** Subtypes that name HTML (`html`, `x-html`, `xhtml+xml`, `vnd.foo+html`...). */
const HTML_SUBTYPE = /(^|[.+-])x?html($|\+)/;
/** Subtypes that name a scripting language whatever their prefix (`x-javascript-module`, `x-vbscript`...). */
const SCRIPT_SUBTYPE = /javascript|ecmascript|jscript|livescript|vbscript|shellscript/;

/** True when a browser would run this type as a page or a script, or it is an executable, installer or script. */
function isBlockedType(type: MIMEType): boolean {
  const subtype = type.subtype;
  return (
    BLOCKED_ESSENCES.has(type.essence) ||
    HTML_SUBTYPE.test(subtype) ||
    SCRIPT_SUBTYPE.test(subtype) ||
    subtype.startsWith("x-httpd-") ||
    subtype.startsWith("x-script.")
  );
}

/**
 * True when the declared `Content-Type` is one the platform refuses (`415 blocked_type`): HTML,
 * XHTML, JavaScript and other code, executables, installers and scripts. Any type of a listed header
 * counts. A header that does not parse is not refused here: the object counts as
 * `application/octet-stream` (its bytes are still checked, and it is served as an attachment).
 */
export function isBlockedDeclaredType(contentType: string): boolean {
  return parseDeclaredType(contentType).listed.some(isBlockedType);
}

/** True when the declared type is Markdown, whose text may legitimately open with HTML tags. */
export function isMarkdownType(contentType: string): boolean {
  const essence = parseDeclaredType(contentType).effective?.essence;
  return essence === "text/markdown" || essence === "text/x-markdown";
}
