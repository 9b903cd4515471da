/** The SVG and XML check's DOCTYPE rule, and that the check stays linear in the file's length. */
import { describe, expect, it } from "vitest";
import { markupScriptReason } from "./markup-script.js";

const check = (text: string) => markupScriptReason(Buffer.from(text, "utf8"));
const SUBSET = "a DOCTYPE with an internal subset";

describe("a DOCTYPE's internal subset", () => {
  it("is found in any DOCTYPE, and a [ outside one is not a subset", () => {
    expect(check('<!DOCTYPE svg [ <!ENTITY x "y"> ]><svg/>')).toBe("an entity declaration");
    expect(check("<!doctype svg [ ]><svg/>")).toBe(SUBSET);
    expect(check("<!DOCTYPE a><p>[1]</p><!DoCtYpE b PUBLIC 'x' [ ]>")).toBe(SUBSET);
    expect(check("<!DOCTYPE svg><svg><text>[not a subset]</text></svg>")).toBeUndefined();
    expect(check("<svg><!ATTLIST svg onload CDATA 'x'></svg>")).toBe(SUBSET);
  });

  it("is looked for in one pass: a file of unclosed DOCTYPEs is answered, not scanned once per DOCTYPE", () => {
    // With a regular expression, 250 KB of this held the host's main thread 5 s, and the time grew
    // with the square of the length: these 4 MB would have taken hours.
    expect(check("<!doctype ".repeat(400_000))).toBeUndefined();
  }, 60_000);
});
