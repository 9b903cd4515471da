/**
 * The upload checks against real files: this machine's ELF binaries and `#!` scripts, script and
 * JavaScript sources, the HTML pages shipped inside npm packages, Java archives, and the crafted
 * attack files in fixtures/files/attacks are refused; the images, SVGs, PDFs, archives, CSV, JSON,
 * Markdown and XML found in node_modules and /usr/share are accepted. The type each file is declared
 * with is the one `platform storage put` guesses from its extension. A few of each go through real
 * HTTP to check the download headers too.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { lookup } from "mime-types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockedContentReason, isBlockedDeclaredType } from "../host/storage/index.js";
import { startUploadHost, type UploadHost } from "./helpers/upload-host.js";

const MAX_FILE = 5 * 1024 * 1024;
const ROOT = join(import.meta.dirname, "..");
const NODE_MODULES = join(ROOT, "node_modules");
const ATTACKS = join(ROOT, "fixtures", "files", "attacks");

/** Every regular file under `dir` (symlinks followed once, depth bounded) accepted by `keep`. */
function walk(dir: string, keep: (path: string) => boolean, depth = 12, found: string[] = []): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return found;
  }
  for (const name of names) {
    const path = join(dir, name);
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(path);
    } catch {
      continue;
    }
    if (stat.isDirectory() && depth > 0) walk(path, keep, depth - 1, found);
    else if (stat.isFile() && stat.size > 0 && stat.size <= MAX_FILE && keep(path)) found.push(path);
  }
  return found;
}

/** At most `count` of `paths`, spread evenly over the sorted list (the same ones on every run). */
function spread(paths: string[], count: number): string[] {
  if (paths.length <= count) return paths;
  const step = paths.length / count;
  return Array.from({ length: count }, (_, i) => paths[Math.floor(i * step)] as string);
}

const byExtension =
  (...extensions: string[]) =>
  (path: string) =>
    extensions.some((extension) => path.toLowerCase().endsWith(`.${extension}`));

function startsWith(path: string, magic: number[]): boolean {
  const head = readFileSync(path).subarray(0, magic.length);
  return magic.every((byte, i) => head[i] === byte);
}

const usrBin = walk("/usr/bin", () => true, 0);
const ELF = spread(
  usrBin.filter((path) => startsWith(path, [0x7f, 0x45, 0x4c, 0x46])),
  60,
);
const SHEBANG = spread(
  usrBin.filter((path) => startsWith(path, [0x23, 0x21])),
  60,
);
const PACKAGE_HTML = walk(NODE_MODULES, byExtension("html", "htm"));
const SHARE_HTML = spread(walk("/usr/share/doc", byExtension("html", "htm")), 40);
const SCRIPT_SOURCES = spread(walk("/usr/share", byExtension("sh", "pl", "php")), 40);
const JAVASCRIPT = spread(walk(NODE_MODULES, byExtension("js", "mjs", "cjs"), 3), 40);
const JAVA = [
  ...spread(walk("/usr/share/java", byExtension("jar"), 1), 10),
  ...walk("/usr/share", byExtension("class"), 3),
];
const ATTACK_FILES = readdirSync(ATTACKS)
  .sort()
  .map((name) => join(ATTACKS, name));

const IMAGES = [
  ...walk(NODE_MODULES, byExtension("png", "jpg", "jpeg", "gif", "ico", "webp")),
  ...spread(walk("/usr/share", byExtension("png", "jpg", "jpeg", "gif", "ico")), 60),
];
const SVGS = [
  ...walk(NODE_MODULES, byExtension("svg")),
  ...spread(walk("/usr/share", byExtension("svg")), 120),
];
const DOCUMENTS = [
  ...walk("/usr/share", byExtension("pdf", "csv"), 8),
  ...spread(walk(NODE_MODULES, byExtension("md")), 150),
  ...spread(walk(NODE_MODULES, byExtension("json"), 3), 60),
  ...spread(walk("/usr/share", byExtension("xml")), 40),
];
const ARCHIVES = [
  ...walk(NODE_MODULES, byExtension("zip", "tar", "gz", "tgz")),
  ...spread(walk("/usr/share", byExtension("gz")), 40),
];

/** The type `platform storage put` would send for this file. */
const declaredType = (path: string) => lookup(path) || "application/octet-stream";

/** Why the upload of `path`, declared as `type`, is refused (undefined: accepted), as the host checks it. */
async function refusal(path: string, type: string): Promise<string | undefined> {
  if (isBlockedDeclaredType(type)) return `declared ${type}`;
  return blockedContentReason(readFileSync(path), type);
}

describe("the corpus", () => {
  it("holds enough real files of each kind", () => {
    const sizes = {
      ELF: ELF.length,
      SHEBANG: SHEBANG.length,
      PACKAGE_HTML: PACKAGE_HTML.length,
      SHARE_HTML: SHARE_HTML.length,
      SCRIPT_SOURCES: SCRIPT_SOURCES.length,
      JAVASCRIPT: JAVASCRIPT.length,
      JAVA: JAVA.length,
      ATTACK_FILES: ATTACK_FILES.length,
      IMAGES: IMAGES.length,
      SVGS: SVGS.length,
      DOCUMENTS: DOCUMENTS.length,
      ARCHIVES: ARCHIVES.length,
    };
    console.log("corpus sizes", sizes);
    for (const [kind, size] of Object.entries(sizes)) expect(size, kind).toBeGreaterThanOrEqual(5);
  });
});

describe("refused whatever they are declared as", () => {
  const refusedByContent = [...ELF, ...SHEBANG, ...PACKAGE_HTML, ...SHARE_HTML, ...JAVA, ...ATTACK_FILES];
  it.each(["application/octet-stream", "image/png", "text/plain"])(
    "refuses binaries, scripts, HTML pages and attack files declared as %s",
    async (type) => {
      const accepted: string[] = [];
      for (const path of refusedByContent) if (!(await refusal(path, type))) accepted.push(path);
      expect(accepted).toEqual([]);
    },
  );

  it("refuses them declared with the type their extension suggests", async () => {
    const accepted: string[] = [];
    for (const path of [...refusedByContent, ...SCRIPT_SOURCES, ...JAVASCRIPT]) {
      if (!(await refusal(path, declaredType(path)))) accepted.push(path);
    }
    expect(accepted).toEqual([]);
  });
});

describe("accepted when benign", () => {
  it("accepts images, SVGs, documents and archives with the type their extension suggests", async () => {
    const refused: string[] = [];
    for (const path of [...IMAGES, ...SVGS, ...DOCUMENTS, ...ARCHIVES]) {
      const reason = await refusal(path, declaredType(path));
      if (reason) refused.push(`${path}: ${reason}`);
    }
    expect(refused).toEqual([]);
  });

  it("accepts images, SVGs and archives declared as application/octet-stream as well", async () => {
    const refused: string[] = [];
    for (const path of [...IMAGES, ...SVGS, ...ARCHIVES]) {
      const reason = await refusal(path, "application/octet-stream");
      if (reason) refused.push(`${path}: ${reason}`);
    }
    expect(refused).toEqual([]);
  });
});

describe("over HTTP", () => {
  let files: UploadHost;
  beforeAll(async () => {
    files = await startUploadHost();
  });
  afterAll(() => files.host.dispose());

  const upload = (path: string, type = declaredType(path)) => files.upload(readFileSync(path), type);

  it("refuses a binary, a script, an npm package's HTML page and an SVG with script with 415 blocked_type", async () => {
    for (const path of [ELF[0], SHEBANG[0], PACKAGE_HTML[0], join(ATTACKS, "svg-utf16le-bom.svg")]) {
      for (const type of [declaredType(path as string), "image/png"]) {
        const response = await upload(path as string, type);
        expect([path, type, response.status], response.text()).toEqual([path, type, 415]);
        const error = response.json<{ error: { code: string; message: string } }>().error;
        expect(error.code).toBe("blocked_type");
        expect(error.message).toMatch(
          /^(This file cannot be stored: .+\.|Files of type .+ cannot be stored .+\.)$/,
        );
      }
    }
  });

  it("refuses a list of types when one of them is blocked (browsers act on the last valid one)", async () => {
    const png = IMAGES.find(byExtension("png")) as string;
    for (const type of [
      "image/png, text/html",
      'text/plain;a="x,y", text/html',
      "image/png,application/xhtml+xml",
    ]) {
      const response = await upload(png, type);
      expect([type, response.status]).toEqual([type, 415]);
    }
  });

  it("serves safe types inline and everything else as an octet-stream attachment, always with nosniff and the sandbox", async () => {
    const cases: Array<[string, string, string, boolean]> = [
      [IMAGES.find(byExtension("png")) as string, "image/png", "image/png", false],
      [SVGS[0] as string, "image/svg+xml", "image/svg+xml", false],
      [
        DOCUMENTS.find(byExtension("md")) as string,
        "text/markdown; charset=UTF-8",
        "text/markdown;charset=UTF-8",
        false,
      ],
      [ARCHIVES.find(byExtension("zip")) as string, "application/zip", "application/octet-stream", true],
      [DOCUMENTS.find(byExtension("xml")) as string, "application/xml", "application/octet-stream", true],
      [IMAGES.find(byExtension("png")) as string, "text/plain, image/png", "image/png", false],
      [SVGS[0] as string, "IMAGE/SVG+XML ; charset=x-user-defined", "image/svg+xml", false],
    ];
    for (const [path, declared, served, attachment] of cases) {
      const response = await upload(path, declared);
      expect(response.status, `${path} as ${declared}: ${response.text()}`).toBe(201);
      const { key } = response.json<{ key: string }>();
      const fetched = await files.download(key);
      expect(fetched.status).toBe(200);
      expect(fetched.body.equals(readFileSync(path))).toBe(true);
      expect(fetched.headers["content-type"], `${path} as ${declared}`).toBe(served);
      expect(String(fetched.headers["content-disposition"] ?? "").startsWith("attachment")).toBe(attachment);
      expect(fetched.headers["x-content-type-options"]).toBe("nosniff");
      expect(fetched.headers["content-security-policy"]).toContain("sandbox");
    }
  });
});
