/**
 * What `useLoad` (dashboard/load.ts) shows for its key: data and errors only of that key, so a page
 * whose key just changed (row B opened after row A) never shows or edits the previous key's answer
 * as its own; the previous answer stays available as `latest` for lists that keep their page in
 * view while the next one loads.
 */
import { describe, expect, it } from "vitest";
import { type LoadState, loadedFor } from "../dashboard/load.js";

describe("loadedFor", () => {
  const answeredA: LoadState<string> = { key: "A", data: "row A", running: false };

  it("shows the answer of its own key", () => {
    expect(loadedFor(answeredA, "A")).toEqual({
      data: "row A",
      latest: "row A",
      error: undefined,
      loading: false,
    });
  });

  it("does not show another key's answer as data, and is loading until its own comes", () => {
    // The render where the key changes: the run for B has not even started.
    expect(loadedFor(answeredA, "B")).toEqual({
      data: undefined,
      latest: "row A",
      error: undefined,
      loading: true,
    });
    expect(loadedFor({ ...answeredA, running: true }, "B").data).toBeUndefined();
  });

  it("does not show another key's error", () => {
    const failedA: LoadState<string> = { key: "A", error: "no such row", running: false };
    expect(loadedFor(failedA, "B").error).toBeUndefined();
    expect(loadedFor(failedA, "A").error).toBe("no such row");
  });

  it("keeps its own data while the same key loads again (reload)", () => {
    expect(loadedFor({ ...answeredA, running: true }, "A")).toMatchObject({ data: "row A", loading: true });
  });

  it("is loading before any answer", () => {
    expect(loadedFor<string>({ key: undefined, running: true }, "A")).toMatchObject({
      data: undefined,
      loading: true,
    });
  });
});
