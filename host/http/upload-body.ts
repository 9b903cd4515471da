import Busboy from "busboy";
import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { fileTooLarge } from "../storage/index.js";
import { readBody } from "./body.js";
import { bodyArrival } from "./body-arrivals.js";

/** Parts of a multipart upload read at most: its file (and one more, to refuse), and form fields. */
const FILE_PARTS = 2;
const FIELD_PARTS = 20;

/** One uploaded file: its bytes and the type its sender declared. */
export interface UploadedFile {
  bytes: Buffer;
  contentType: string;
}

/**
 * A header's value as its sender wrote it: Node reads each byte as one character, so UTF-8 text
 * (a file name in a parameter) came out as C1 control characters and was refused; a lone byte
 * that is not UTF-8 (0x9B, a terminal's escape prefix) becomes U+FFFD instead. Tabs, legal
 * whitespace in a header, are spaces.
 */
function headerText(value: string): string {
  return Buffer.from(value, "latin1").toString("utf8").replace(/\t/g, " ");
}

/**
 * Reads an upload of at most `limit` bytes: the raw body with its Content-Type, or the one file part
 * of a `multipart/form-data` form (what a browser `<form>` sends). A file over the limit stops being
 * kept at `limit + 1` bytes and is `413 too_large`.
 */
export async function uploadBody(ctx: Context, limit: number): Promise<UploadedFile> {
  const declared = headerText(ctx.get("content-type")) || "application/octet-stream";
  if (!declared.toLowerCase().startsWith("multipart/form-data")) {
    return { bytes: await readBody(ctx, limit), contentType: declared };
  }
  const arrival = bodyArrival(ctx);
  return new Promise<UploadedFile>((resolve, reject) => {
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({
        headers: ctx.req.headers,
        limits: {
          files: FILE_PARTS,
          fileSize: limit + 1,
          fields: FIELD_PARTS,
          parts: FILE_PARTS + FIELD_PARTS,
        },
      });
    } catch {
      reject(new PlatformError("invalid_request", "Malformed multipart body."));
      return;
    }
    // The form's bytes count against the host's body arrivals as they come (body-arrivals.ts).
    const count = (chunk: Buffer) => {
      const refused = arrival.take(chunk.length);
      if (!refused) return;
      ctx.req.off("data", count);
      ctx.req.unpipe(parser);
      ctx.req.resume();
      reject(refused);
    };
    ctx.req.on("data", count);
    // Past its parts the form is not read further: each part's headers are parsed on the main
    // thread, and 1.3 million empty fields in 60 MiB held it 4.5 s an upload.
    const tooManyParts = () => {
      ctx.req.off("data", count);
      ctx.req.unpipe(parser);
      ctx.req.resume();
      reject(
        new PlatformError(
          "invalid_request",
          `A multipart upload carries one file part and at most ${FIELD_PARTS} other fields.`,
        ),
      );
    };
    parser.once("partsLimit", tooManyParts);
    parser.once("filesLimit", tooManyParts);
    parser.once("fieldsLimit", tooManyParts);
    // A connection that closes before the form ended settles the upload (and frees its count).
    ctx.req.once("close", () => {
      if (!ctx.req.complete) reject(new PlatformError("bad_request", "The request body could not be read."));
    });
    const files: UploadedFile[] = [];
    let tooLarge = false;
    parser.on("file", (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("limit", () => {
        tooLarge = true;
      });
      stream.on("close", () =>
        files.push({
          bytes: Buffer.concat(chunks),
          contentType: info.mimeType || "application/octet-stream",
        }),
      );
    });
    parser.on("error", () => reject(new PlatformError("invalid_request", "Malformed multipart body.")));
    parser.on("close", () => {
      if (tooLarge) reject(fileTooLarge(limit));
      else if (files.length !== 1)
        reject(new PlatformError("invalid_request", "A multipart upload carries exactly one file part."));
      else resolve(files[0] as UploadedFile);
    });
    ctx.req.pipe(parser);
  }).finally(() => arrival.end());
}
