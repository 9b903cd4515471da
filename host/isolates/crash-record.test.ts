import { describe, expect, it } from "vitest";
import { crashWords, parseSupervisorLine } from "./crash-record.js";

describe("the supervisor channel's crash line", () => {
  it("names the bundle, the deployment, its owner and whether it was deploying, and reads back what it wrote", () => {
    const subject = { artifact: "00ee95", deployment: "attacker", owner: "dev_Ab-9_x" };
    expect(crashWords(subject)).toBe("00ee95 attacker dev_Ab-9_x call");
    expect(parseSupervisorLine(`crash ${crashWords(subject)}`)).toEqual({ kind: "crash", ...subject });
    const deploying = { ...subject, deploying: true };
    expect(crashWords(deploying)).toBe("00ee95 attacker dev_Ab-9_x deploy");
    expect(parseSupervisorLine(`crash ${crashWords(deploying)}`)).toEqual({ kind: "crash", ...deploying });
  });

  it("writes - for what is not known, and reads it as absent", () => {
    expect(crashWords({ artifact: "00ee95", owner: null })).toBe("00ee95 - - call");
    expect(parseSupervisorLine("crash 00ee95 - - call")).toEqual({ kind: "crash", artifact: "00ee95" });
    expect(parseSupervisorLine("crash 00ee95 - -")).toEqual({ kind: "crash", artifact: "00ee95" });
    expect(parseSupervisorLine("crash 00ee95 unclaimed -")).toEqual({
      kind: "crash",
      artifact: "00ee95",
      deployment: "unclaimed",
    });
    // The line of a bundle alone (a server of an earlier version) still names it.
    expect(parseSupervisorLine("crash 00ee95")).toEqual({ kind: "crash", artifact: "00ee95" });
  });

  it("ignores lines it cannot read whole: no bundle, extra words, characters outside the names", () => {
    for (const line of [
      "crash ",
      "crash  - -",
      "crash 00ee95 attacker",
      "crash 00ee95 attacker dev_x extra",
      "crash 00ee95 attacker dev_x call extra",
      "crash 00ee95 Attacker dev_x",
      "crash 00ee95 a/b dev_x",
      "crash 00ee95 attacker dev x",
    ])
      expect(parseSupervisorLine(line), line).toBeUndefined();
    expect(parseSupervisorLine("alive")).toEqual({ kind: "alive" });
  });
});
