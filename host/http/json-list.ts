import { Readable } from "node:stream";
import { TurnTaker } from "../db/turn-taker.js";

/**
 * `{ "<field>": [...items] }` as a JSON answer's body, made one item at a time as its client reads
 * it, giving the event loop back every few milliseconds: a developer's list of 100 deployments,
 * each with 1,000 endpoints and 100 long env names, was 143 MB of JSON made in one stretch of the
 * main thread (1.7-2.3 s) at every `GET /v1/deploys`.
 */
export function jsonListBody(field: string, items: readonly unknown[]): Readable {
  return Readable.from(jsonListPieces(field, items), { objectMode: false });
}

async function* jsonListPieces(field: string, items: readonly unknown[]): AsyncGenerator<string> {
  const turns = new TurnTaker();
  yield `{${JSON.stringify(field)}:[`;
  for (let index = 0; index < items.length; index++) {
    if (turns.due()) await turns.take();
    yield `${index === 0 ? "" : ","}${JSON.stringify(items[index])}`;
  }
  yield "]}";
}
