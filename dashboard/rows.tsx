import { useCallback, useMemo, useState } from "react";
import type { RowsAnswer, TableInfo, TablesAnswer } from "../sdk/protocol/dashboard.js";
import type { FieldValue } from "../sdk/values/schema-spec.js";
import { api, deployPath } from "./api.js";
import { CopyButton } from "./copy.js";
import { type Filter, filterParams, rangeOf, readFilter } from "./filter.js";
import { FilterBar } from "./filter-bar.js";
import { formatCount, formatTime } from "./format.js";
import { useLoad } from "./load.js";
import { dataUrl, linkTo, navigate, type Route } from "./route.js";
import { ownValue, type Row, rowOfSelection } from "./row-json.js";
import { RowPanel } from "./row-panel.js";
import { loadTables } from "./tables.js";

const PAGE_SIZE = 25;

/** A cell's text: strings as they are (cut), numbers and booleans as JSON, absent as a dash. */
function Cell({ value }: { value: FieldValue | undefined }) {
  if (value === undefined) return <span className="muted">–</span>;
  if (typeof value === "string") return <>{value.length > 80 ? `${value.slice(0, 79)}…` : value}</>;
  return <code>{JSON.stringify(value)}</code>;
}

/** The rows of one page, newest first or in the chosen index's order. */
function RowsTable({
  table,
  rows,
  selected,
  onOpen,
}: {
  table: TableInfo;
  rows: Row[];
  selected: string | null;
  onOpen: (id: string) => void;
}) {
  return (
    <div className="scroll">
      <table className="grid rows" aria-label={`Rows of ${table.name}`}>
        <thead>
          <tr>
            <th>id</th>
            <th>createdAt</th>
            {table.fields.map((field) => (
              <th key={field.name}>{field.name}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const id = String(row.id);
            return (
              <tr key={id} aria-selected={selected === id}>
                <td className="id">
                  <button
                    type="button"
                    className="link"
                    onClick={() => onOpen(id)}
                    aria-label={`Open row ${id}`}
                  >
                    <code>{id.length > 12 ? `${id.slice(0, 10)}…` : id}</code>
                  </button>
                  <CopyButton text={id} label={`Copy id ${id}`} />
                </td>
                <td className="time">{formatTime(Number(row.createdAt))}</td>
                {table.fields.map((field) => (
                  <td key={field.name}>
                    <Cell value={ownValue(row, field.name)} />
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A table's rows: the list of tables at the side, the filter (an index range, in the URL), one
 * page of rows with the range's exact count, pages onward by cursor, and the selected row's panel.
 */
export function RowsPage({ route }: { route: Extract<Route, { page: "rows" }> }) {
  const { deployment, params } = route;
  const tables = useLoad(() => loadTables(deployment), deployment);
  const table = tables.data?.tables.find((t) => t.name === route.table);
  const filter = useMemo(() => readFilter(params, table), [params, table]);
  const cursor = params.get("cursor");
  const pageNumber = Math.max(1, Number(params.get("page") ?? 1) || 1);
  const selected = params.get("row");
  const [inserting, setInserting] = useState(false);
  const [count, setCount] = useState<RowsAnswer["count"]>();

  const query = useMemo(() => {
    if (!table) return undefined;
    try {
      const search = new URLSearchParams({
        index: filter.index,
        order: filter.order,
        range: JSON.stringify(rangeOf(filter, table)),
        numItems: String(PAGE_SIZE),
      });
      if (cursor) search.set("cursor", cursor);
      return { search: search.toString() };
    } catch (error) {
      return { problem: error instanceof Error ? error.message : String(error) };
    }
  }, [table, filter, cursor]);

  const rowsPath = deployPath(deployment, `/tables/${encodeURIComponent(route.table)}/rows`);
  const rows = useLoad(
    async () => {
      if (!query?.search) return undefined;
      const answer = await api<RowsAnswer>(`${rowsPath}?${query.search}`);
      if (answer.count) setCount(answer.count);
      return answer;
    },
    `${rowsPath}?${query?.search ?? ""}`,
  );

  const [version, setVersion] = useState(0);
  const selectedRow = useLoad(
    async () => {
      if (!selected) return undefined;
      return (await api<{ row: Row }>(`${rowsPath}/${encodeURIComponent(selected)}`)).row;
    },
    `${selected ?? ""}:${version}`,
  );
  // The last answer stays while a saved row is read again, but never stands in for another row.
  const panelRow = rowOfSelection(selected, selectedRow.latest);
  // The page in view stays while the next one loads; paging onward uses only the current answer.
  const shown = rows.latest;

  const go = (change: (next: URLSearchParams) => void, replace = false) => {
    const next = new URLSearchParams(params);
    change(next);
    navigate(dataUrl(deployment, route.table, next), replace);
  };
  const apply = (next: Filter) => {
    setCount(undefined);
    navigate(
      dataUrl(
        deployment,
        route.table,
        filterParams(
          next,
          table?.indexes.find((i) => i.name === next.index),
        ),
      ),
    );
  };
  const close = useCallback(() => {
    setInserting(false);
    const next = new URLSearchParams(location.search);
    next.delete("row");
    navigate(dataUrl(deployment, route.table, next), true);
  }, [deployment, route.table]);

  const answer: TablesAnswer | undefined = tables.data;
  return (
    <div className="data-layout">
      <nav className="tables" aria-label="Tables">
        <h2>Tables</h2>
        <ul>
          {answer?.tables.map((t) => (
            <li key={t.name}>
              <a
                {...linkTo(dataUrl(deployment, t.name))}
                aria-current={t.name === route.table ? "page" : undefined}
              >
                {t.name} <span className="muted">{formatCount(t.rows)}</span>
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <section className="rows-main">
        <h1>
          {route.table} <span className="muted count">{count ? `${formatCount(count)} rows` : ""}</span>
        </h1>
        {tables.error && (
          <p className="error" role="alert">
            {tables.error}
          </p>
        )}
        {answer && !table && (
          <p className="error" role="alert">
            No table {route.table} in {deployment}.
          </p>
        )}
        {table && (
          <>
            {answer?.apiVersion !== "legacy" && (
              <FilterBar key={params.toString()} table={table} filter={filter} onApply={apply} />
            )}
            <div className="toolbar">
              <span className="muted" aria-live="polite">
                {rows.loading
                  ? "Loading…"
                  : `Page ${pageNumber}${count ? ` · ${formatCount(count)} matching` : ""}`}
              </span>
              {answer?.writable && (
                <button type="button" className="primary" onClick={() => setInserting(true)}>
                  Insert row
                </button>
              )}
            </div>
            {query?.problem && (
              <p className="error" role="alert">
                {query.problem}
              </p>
            )}
            {rows.error && (
              <p className="error" role="alert">
                {rows.error}
              </p>
            )}
            {shown && shown.page.length === 0 && <p className="notice">No rows match.</p>}
            {shown && shown.page.length > 0 && (
              <RowsTable
                table={table}
                rows={shown.page}
                selected={selected}
                onOpen={(id) => go((next) => next.set("row", id))}
              />
            )}
            <div className="pager">
              <button type="button" disabled={pageNumber <= 1} onClick={() => history.back()}>
                Previous page
              </button>
              <button
                type="button"
                disabled={!rows.data || rows.data.isDone}
                onClick={() =>
                  go((next) => {
                    next.set("cursor", rows.data?.continueCursor ?? "");
                    next.set("page", String(pageNumber + 1));
                    next.delete("row");
                  })
                }
              >
                Next page
              </button>
            </div>
          </>
        )}
      </section>
      {table && (inserting || panelRow) && (
        <RowPanel
          key={inserting ? "new" : (selected ?? "")}
          deployment={deployment}
          table={table}
          row={inserting ? undefined : panelRow}
          writable={answer?.writable === true}
          onClose={close}
          onChanged={(row) => {
            setInserting(false);
            setCount(undefined);
            setVersion((n) => n + 1);
            rows.reload();
            tables.reload();
            const next = new URLSearchParams(location.search);
            if (row) next.set("row", String(row.id));
            else next.delete("row");
            if (!cursor) next.delete("page");
            navigate(dataUrl(deployment, route.table, next), true);
          }}
        />
      )}
      {selected && selectedRow.error && (
        <p className="error" role="alert">
          {selectedRow.error}
        </p>
      )}
    </div>
  );
}
