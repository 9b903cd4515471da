import type { PaginationResult } from "../protocol/index.js";
import { PlatformError } from "../values/index.js";
import { notifyEach } from "./notify-each.js";
import type { QueryResult, SyncConnection } from "./sync-connection.js";

/** Where a paginated list stands. */
export type PaginationStatus = "LoadingFirstPage" | "CanLoadMore" | "LoadingMore" | "Exhausted";

/** What `usePaginatedQuery` returns. */
export interface PaginatedQueryState<Item> {
  /** Every loaded page's items, in order. */
  results: Item[];
  status: PaginationStatus;
  isLoading: boolean;
  /**
   * The failure of the first failing page, if any; null again once every page answers. The
   * results keep the pages' last values meanwhile.
   */
  error: PlatformError | null;
  /** Loads `numItems` more (ignored unless the status is `CanLoadMore`). */
  loadMore(numItems: number): void;
}

interface Page {
  cursor: string | null;
  numItems: number;
  stop: () => void;
  result?: PaginationResult<unknown>;
  valueJson?: string;
  /** Set while the page's query fails. */
  error?: PlatformError | undefined;
}

/** Whether a query's answer has the shape of a page (another shape would break the list's build). */
function isPage(value: unknown): value is PaginationResult<unknown> {
  const page = value as Partial<PaginationResult<unknown>> | null;
  return (
    typeof page === "object" &&
    page !== null &&
    Array.isArray(page.page) &&
    typeof page.isDone === "boolean" &&
    typeof page.continueCursor === "string"
  );
}

/**
 * A paginated query (docs/client.md): the query gets a trailing pagination argument
 * `paginationOpts: { cursor, numItems }` in its arguments; every loaded page stays subscribed; the
 * pages' items are concatenated; and when a loaded page changes (a reactive invalidation) the list
 * resets to its first page, so pages never overlap or leave gaps.
 */
export class PaginatedQuery<Item = unknown> {
  private pages: Page[] = [];
  private readonly listeners = new Set<() => void>();
  private snapshot: PaginatedQueryState<Item>;
  /** Resets so far (tests observe them). */
  resets = 0;
  private stopWatchingUser = () => {};

  constructor(
    private readonly connection: SyncConnection,
    private readonly name: string,
    private readonly args: Record<string, unknown>,
    private readonly initialNumItems: number,
  ) {
    if (!Number.isSafeInteger(initialNumItems) || initialNumItems < 1)
      throw new RangeError("initialNumItems must be a positive integer.");
    this.snapshot = this.build();
  }

  /** Starts the subscriptions with the first listener; stops them with the last. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (this.pages.length === 0) {
      this.addPage(null, this.initialNumItems);
      this.stopWatchingUser = this.connection.onUserChange(() => this.restart());
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0) return;
      this.stopAll();
      this.stopWatchingUser();
    };
  }

  /** The current state; the same object until something changes. */
  getSnapshot(): PaginatedQueryState<Item> {
    return this.snapshot;
  }

  /** Loads `numItems` more after the last page. */
  loadMore(numItems: number): void {
    const last = this.pages.at(-1);
    if (!last?.result || last.result.isDone) return;
    if (!Number.isSafeInteger(numItems) || numItems < 1)
      throw new RangeError("loadMore(numItems) needs a positive integer.");
    this.addPage(last.result.continueCursor, numItems);
    this.publish();
  }

  private addPage(cursor: string | null, numItems: number): void {
    const page: Page = { cursor, numItems, stop: () => {} };
    this.pages.push(page);
    const argsJson = JSON.stringify({ ...this.args, paginationOpts: { cursor, numItems } });
    page.stop = this.connection.subscribe(this.name, argsJson, (result) => this.receive(page, result));
  }

  private receive(page: Page, result: QueryResult): void {
    if (!this.pages.includes(page)) return;
    if ("error" in result) {
      page.error = result.error;
      this.publish();
      return;
    }
    if (!isPage(result.value)) {
      page.error = new PlatformError(
        "bad_request",
        `Query ${this.name} does not answer a page ({ page, isDone, continueCursor }): a paginated query returns ctx.db.<table>...paginate(args.paginationOpts).`,
      );
      this.publish();
      return;
    }
    page.error = undefined;
    const json = JSON.stringify(result.value);
    const changed = page.valueJson !== undefined && page.valueJson !== json;
    page.valueJson = json;
    page.result = result.value as PaginationResult<unknown>;
    if (changed) this.reset();
    else this.publish();
  }

  /** Back to the first page only (its subscription is kept; later pages are dropped). */
  private reset(): void {
    this.resets++;
    const [first, ...rest] = this.pages;
    for (const page of rest) page.stop();
    this.pages = first ? [first] : [];
    this.publish();
  }

  /**
   * Back to loading the first page, with nothing shown: the signed-in user changed, and the pages
   * loaded (their items, their cursors) were the last user's.
   */
  private restart(): void {
    this.stopAll();
    this.addPage(null, this.initialNumItems);
    this.publish();
  }

  private stopAll(): void {
    for (const page of this.pages) page.stop();
    this.pages = [];
  }

  private build(): PaginatedQueryState<Item> {
    const results: Item[] = [];
    let status: PaginationStatus = "CanLoadMore";
    for (const page of this.pages) {
      if (!page.result) {
        status = page === this.pages[0] ? "LoadingFirstPage" : "LoadingMore";
        break;
      }
      results.push(...(page.result.page as Item[]));
      status = page.result.isDone ? "Exhausted" : "CanLoadMore";
    }
    if (this.pages.length === 0) status = "LoadingFirstPage";
    return {
      results,
      status,
      isLoading: status === "LoadingFirstPage" || status === "LoadingMore",
      error: this.pages.find((page) => page.error)?.error ?? null,
      loadMore: (numItems) => this.loadMore(numItems),
    };
  }

  private publish(): void {
    this.snapshot = this.build();
    notifyEach(this.listeners);
  }
}
