import { MIMEType } from "whatwg-mimetype";

/**
 * The values of a header that may list several, split on commas outside quoted strings (Fetch's
 * "get, decode, and split"): `text/plain;a="x,y", text/html` is two values.
 */
function splitHeaderValues(header: string): string[] {
  const values: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const char = header[i] as string;
    if (quoted && char === "\\" && i + 1 < header.length) {
      current += char + header[++i];
    } else if (char === '"') {
      quoted = !quoted;
      current += char;
    } else if (char === "," && !quoted) {
      values.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  values.push(current);
  return values;
}

/** A declared `Content-Type` as browsers read it. */
export interface DeclaredType {
  /** Every type the header lists that parses; a blocked one anywhere in the list is refused. */
  listed: MIMEType[];
  /**
   * The type a browser acts on (Fetch's "extract a MIME type": the last valid one, keeping an earlier
   * charset of the same essence), or null when none parses: then the object counts as
   * `application/octet-stream`.
   */
  effective: MIMEType | null;
}

/** Parses a declared `Content-Type` with the WHATWG MIME type parser (case, parameters, whitespace, lists). */
export function parseDeclaredType(header: string): DeclaredType {
  const listed: MIMEType[] = [];
  let effective: MIMEType | null = null;
  let charset: string | undefined;
  for (const value of splitHeaderValues(header)) {
    const type = MIMEType.parse(value);
    if (!type || type.essence === "*/*") continue;
    listed.push(type);
    const sameEssence = effective?.essence === type.essence;
    effective = type;
    if (!sameEssence) charset = type.parameters.get("charset");
    else if (charset !== undefined && !type.parameters.has("charset"))
      type.parameters.set("charset", charset);
  }
  return { listed, effective };
}
