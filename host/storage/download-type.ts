import { parseDeclaredType } from "./content-type-header.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";

/**
 * Types a browser may show inline: they cannot run script in the download's origin. Everything else
 * is served as an `application/octet-stream` attachment.
 */
const INLINE_ESSENCES: ReadonlySet<string> = new Set([
  "image/png",
  "image/apng",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/bmp",
  "image/x-icon",
  "image/vnd.microsoft.icon",
  "image/svg+xml",
  "application/pdf",
  "text/plain",
  "text/csv",
  "text/markdown",
  "application/json",
  "audio/mpeg",
  "audio/mp4",
  "audio/aac",
  "audio/ogg",
  "audio/opus",
  "audio/wav",
  "audio/x-wav",
  "audio/webm",
  "audio/flac",
  "video/mp4",
  "video/webm",
  "video/ogg",
]);

/** Inline types whose `charset` parameter is kept (how their text is decoded); others are served bare. */
const TEXT_ESSENCES: ReadonlySet<string> = new Set([
  "text/plain",
  "text/csv",
  "text/markdown",
  "application/json",
]);

const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The `Content-Type` to serve an object stored as `contentType` with inline, normalised (essence and
 * charset only), or undefined when it must be an attachment: the type is not on the inline list, or the
 * header does not parse. A listed header counts as the type a browser would act on.
 */
export function inlineContentType(contentType: string): string | undefined {
  const type = parseDeclaredType(contentType).effective;
  if (!type || !INLINE_ESSENCES.has(type.essence)) return undefined;
  const charset = TEXT_ESSENCES.has(type.essence) ? type.parameters.get("charset") : undefined;
  return charset !== undefined && HTTP_TOKEN.test(charset)
    ? `${type.essence};charset=${charset}`
    : type.essence;
}

/** True when an object stored with this type must be served as an attachment (not on the inline list). */
export function mustDownloadAsAttachment(contentType: string): boolean {
  return inlineContentType(contentType) === undefined;
}

/** How one download is served: its `Content-Type`, and whether it is an attachment. */
export interface DownloadType {
  contentType: string;
  attachment: boolean;
}

const ATTACHMENT: DownloadType = { contentType: "application/octet-stream", attachment: true };

/**
 * Whether serving an object stored as `contentType` inline needs its bytes checked again: an SVG
 * whose bytes passed the script check under other rules than today's (`checkedUnder`).
 */
export function markupCheckDue(contentType: string, checkedUnder: number | undefined): boolean {
  return inlineContentType(contentType) === "image/svg+xml" && checkedUnder !== MARKUP_RULES_VERSION;
}

/**
 * How to serve an object: inline with its normalised type when that type is safe, and for SVG only
 * when its bytes passed the script check under today's rules (`checkedUnder`: the version they
 * passed; see {@link markupCheckDue}); otherwise as an `application/octet-stream` attachment.
 */
export function downloadType(contentType: string, checkedUnder: number | undefined): DownloadType {
  const inline = inlineContentType(contentType);
  if (inline === undefined || markupCheckDue(contentType, checkedUnder)) return ATTACHMENT;
  return { contentType: inline, attachment: false };
}
