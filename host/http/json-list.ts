import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { PlatformError } from "../../sdk/values/index.js";
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

/**
 * Listings made as their clients read them, per caller: such an answer has no length, so the
 * bounds on unread answers (unsent-answers.ts) do not see it, and each one left unread keeps its
 * next item (up to about 1.4 MB of JSON) and its connection. A caller has at most `most` open.
 */
export class OpenListings {
  private readonly open = new Map<string, number>();

  constructor(private readonly most: number) {}

  /** Counts a listing of `caller` answered on `res` until it ends, or refuses it (`429`) past the bound. */
  begin(caller: string, res: ServerResponse): void {
    const now = this.open.get(caller) ?? 0;
    if (now >= this.most)
      throw new PlatformError(
        "limit_exceeded",
        `At most ${this.most} listings at once: read the ones you asked for first.`,
        { retryAfterSeconds: 1 },
      );
    this.open.set(caller, now + 1);
    res.once("close", () => {
      const left = (this.open.get(caller) ?? 1) - 1;
      if (left > 0) this.open.set(caller, left);
      else this.open.delete(caller);
    });
  }
}
