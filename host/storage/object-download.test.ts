/**
 * How a download sends an object: a stream of its bytes, so that downloads in flight hold a
 * buffer's worth each (600 unread downloads of a 5 MiB file from one address held 633 MiB when
 * each read its object whole); its bytes whole only when an SVG must be checked again.
 */
import { Readable } from "node:stream";
import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";
import { MemoryBlobStore } from "./memory-blob-store.js";
import type { ObjectRecord } from "./object-records.js";
import { ObjectService } from "./objects.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
let objects: ObjectService;
beforeEach(async () => {
  env = await tempDatabase();
  objects = new ObjectService(env.db, new MemoryBlobStore(), async () => ({
    quotaOwner: "dev-1",
    incarnation: null,
  }));
});
afterEach(() => env.dispose());

const upload = (contentType: string, bytes: Buffer) =>
  objects.upload({
    deployment: "d",
    quotaOwner: "dev-1",
    incarnation: null,
    visibility: "public",
    contentType,
    bytes,
    uploaderId: "user:1",
    uploaderEmail: null,
  });

async function read(body: Buffer | Readable): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

const svg = (body: string) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${body}</svg>`);
const SVG = svg('<rect width="1" height="1"/>');

it("streams an object, and an SVG checked under today's rules", async () => {
  const bytes = Buffer.alloc(300_000, 9);
  for (const [type, sent] of [
    ["application/octet-stream", bytes],
    ["image/svg+xml", SVG],
  ] as const) {
    const { body, type: served } = await objects.download(await upload(type, sent));
    expect(body).toBeInstanceOf(Readable);
    expect((await read(body)).equals(sent)).toBe(true);
    expect(served.attachment).toBe(type !== "image/svg+xml");
  }
});

it("reads an SVG stored before its record kept the rules whole, and checks it again", async () => {
  const stored = await upload("image/svg+xml", SVG);
  const records = env.db.records<ObjectRecord>("objects");
  const { markupRules: _kept, ...older } = stored;
  await records.put(`d/${stored.key}`, older);
  const { body, type } = await objects.download(older);
  expect(Buffer.isBuffer(body)).toBe(true);
  expect(type).toEqual({ contentType: "image/svg+xml", attachment: false });
  // Marked as checked: the next download streams it, unchecked.
  const marked = (await records.get(`d/${stored.key}`)) as ObjectRecord;
  expect(marked.markupRules).toBe(MARKUP_RULES_VERSION);
  expect((await objects.download(marked)).body).toBeInstanceOf(Readable);
});

it("refuses an SVG whose script follows more whitespace than the sniffing reads", async () => {
  // XML may put any whitespace before its root element; the upload looked at the first 4 KB only,
  // took the file for something other than markup, and did not check it for script.
  const padded = Buffer.concat([Buffer.alloc(5000, 0x20), svg("<script>alert(1)</script>")]);
  await expect(upload("image/svg+xml", padded)).rejects.toMatchObject({ code: "blocked_type" });
});
