import { deflateRawSync } from "node:zlib";
import { ZipHandler } from "@tokenizer/inflate";
import { describe, expect, it, vi } from "vitest";
import yazl from "yazl";
import { blockedContentReason, executableReason } from "./blocked-types.js";
import { zipEntryNames, zipType } from "./zip-entries.js";

/** A zip of `entries` (name, content), compressed as zips usually are. */
async function zipOf(entries: Array<[string, Buffer | string]>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of entries) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A zip whose one entry, `name`, inflates to `mebibytes` MiB of zeros: one deflated MiB repeated
 * (a sync-flushed block sequence starts afresh), then an empty final block.
 */
function bomb(name: string, mebibytes: number): Buffer {
  const chunk = deflateRawSync(Buffer.alloc(1024 * 1024), { finishFlush: 2 /* Z_SYNC_FLUSH */ });
  const data = Buffer.concat([...Array.from({ length: mebibytes }, () => chunk), Buffer.from([0x03, 0x00])]);
  const size = mebibytes * 1024 * 1024;
  const nameBytes = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(size, 22);
  local.writeUInt16LE(nameBytes.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(size, 24);
  central.writeUInt16LE(nameBytes.length, 28);
  const directoryAt = 30 + nameBytes.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(46 + nameBytes.length, 12);
  end.writeUInt32LE(directoryAt, 16);
  return Buffer.concat([local, nameBytes, data, central, nameBytes, end]);
}

describe("zip entries", () => {
  it("names a zip's entries from its central directory, and tells jars, apks and extensions by them", async () => {
    const plain = await zipOf([
      ["a.txt", "x"],
      ["dir/b.txt", "y"],
    ]);
    expect(zipEntryNames(plain)).toEqual(["a.txt", "dir/b.txt"]);
    expect(zipType(plain).ext).toBe("zip");
    expect(
      zipType(
        await zipOf([
          ["META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n"],
          ["A.class", "x"],
        ]),
      ).ext,
    ).toBe("jar");
    expect(
      zipType(
        await zipOf([
          ["AndroidManifest.xml", "x"],
          ["classes2.dex", "x"],
        ]),
      ).ext,
    ).toBe("apk");
    expect(zipType(await zipOf([["META-INF/mozilla.rsa", "x"]])).ext).toBe("xpi");
    // As file-type decides: a document's `mimetype` or `[Content_Types].xml` first makes it no jar.
    expect(
      zipType(
        await zipOf([
          ["mimetype", "application/epub+zip"],
          ["META-INF/MANIFEST.MF", "x"],
        ]),
      ).ext,
    ).toBe("zip");
    // No readable directory (cut short): nothing could run it.
    expect(zipEntryNames(plain.subarray(0, plain.length - 10))).toBeUndefined();
    expect(await blockedContentReason(await zipOf([["META-INF/MANIFEST.MF", "x"]]))).toBe(
      "the file is application/java-archive",
    );
  });

  it("checks a zip whose document entry inflates to 256 MiB without unpacking it", async () => {
    const unzip = vi.spyOn(ZipHandler.prototype, "unzip");
    try {
      for (const name of ["[Content_Types].xml", "mimetype"]) {
        const archive = bomb(name, 256);
        expect(archive.length).toBeLessThan(1024 * 1024);
        expect(await blockedContentReason(archive, "application/zip")).toBeUndefined();
        expect(await executableReason(archive)).toBeUndefined();
      }
      // file-type's zip reader (which unpacks such entries whole) was never asked.
      expect(unzip).not.toHaveBeenCalled();
    } finally {
      unzip.mockRestore();
    }
  });
});
