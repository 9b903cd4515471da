import { UNPRINTABLE } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** Characters of a stored file's type, as an archive's record may hold too. */
const CONTENT_TYPE_CHARS = 255;
/** Characters of an archived record's uploader id and email. */
const UPLOADER_CHARS = 320;

/**
 * Why `contentType` may not be stored as a file's type, or undefined when it may. The type is
 * shown to developers as it was sent (in `platform storage list`, the dashboard): control
 * characters in it reached their terminals as escape codes (a one-byte U+009B passes Node's
 * header checks).
 */
export function contentTypeFault(contentType: string): string | undefined {
  if (contentType.length === 0 || contentType.length > CONTENT_TYPE_CHARS)
    return `must be 1 to ${CONTENT_TYPE_CHARS} characters`;
  if (UNPRINTABLE.test(contentType)) return "must not hold control characters";
  return undefined;
}

/** Whether `text` may be stored as an archived record's uploader id or email. */
export function isUploaderText(text: string): boolean {
  return text.length > 0 && text.length <= UPLOADER_CHARS && !UNPRINTABLE.test(text);
}

/** Refuses (`bad_request`) a type an upload may not store (see {@link contentTypeFault}). */
export function checkUploadedContentType(contentType: string): void {
  const fault = contentTypeFault(contentType);
  if (fault)
    throw new PlatformError(
      "bad_request",
      `A file's Content-Type ${fault}: send a plain media type, such as image/png.`,
    );
}
