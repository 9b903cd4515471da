/**
 * Which reads of a deployment's record may be kept: none begun before the id changed. The count
 * of an id's changes is kept only while a read of it is under way, and must not be forgotten (or
 * begun again from zero) while another read of the id that began earlier is still under way.
 */
import { expect, it } from "vitest";
import { ReadGenerations } from "./read-generations.js";

it("refuses a read begun before a change, though other reads of the id began and ended meanwhile", () => {
  const generations = new ReadGenerations();
  const slow = generations.begin("app");
  const quick = generations.begin("app");
  generations.changed("app");
  expect(generations.unchanged(quick)).toBe(false);
  generations.end(quick);
  // A read begun after the change, under way as the slow one answers: the count stayed for both.
  const after = generations.begin("app");
  expect(generations.unchanged(after)).toBe(true);
  expect(generations.unchanged(slow)).toBe(false);
  generations.end(after);
  generations.end(slow);
  expect(generations.size).toBe(0);
});

it("forgets changes no read was under way for, and ids once their reads ended", () => {
  const generations = new ReadGenerations();
  for (let i = 0; i < 1000; i++) generations.changed(`id-${i}`);
  expect(generations.size).toBe(0);
  const read = generations.begin("app");
  expect(generations.unchanged(read)).toBe(true);
  generations.end(read);
  generations.end(read);
  expect(generations.size).toBe(0);
  // An ended read is never taken as unchanged: its count may have been forgotten and begun again.
  expect(generations.unchanged(read)).toBe(false);
});

it("hands a read's value to keep only when its id did not change meanwhile, and ends it even when it fails", async () => {
  const generations = new ReadGenerations();
  const kept: string[] = [];
  await generations.read(
    "app",
    async () => "first",
    (value) => kept.push(value),
  );
  await generations.read(
    "app",
    async () => {
      generations.changed("app");
      return "raced";
    },
    (value) => kept.push(value),
  );
  await expect(
    generations.read(
      "app",
      () => Promise.reject(new Error("database away")),
      () => {},
    ),
  ).rejects.toThrow("database away");
  expect(kept).toEqual(["first"]);
  expect(generations.size).toBe(0);
});
