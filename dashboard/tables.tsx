import type { TableInfo, TablesAnswer } from "../sdk/protocol/dashboard.js";
import { api, deployPath } from "./api.js";
import { formatCount } from "./format.js";
import { useLoad } from "./load.js";
import { dataUrl, linkTo } from "./route.js";

/** A field's type as the schema declares it: `id("users")`, `number().optional()`, `.default(0)`. */
export function typeLabel(field: TableInfo["fields"][number]): string {
  let label = field.kind === "id" ? `id("${field.table ?? "?"}")` : `${field.kind}()`;
  if (field.optional) label += ".optional()";
  if (field.default !== undefined) label += `.default(${JSON.stringify(field.default)})`;
  return label;
}

/** Loads a deployment's tables (the data pages share this request's shape). */
export function loadTables(deployment: string): Promise<TablesAnswer> {
  return api<TablesAnswer>(deployPath(deployment, "/tables"));
}

/** One table's schema: fields with their types, indexes with their fields. */
function TableCard({ deployment, table }: { deployment: string; table: TableInfo }) {
  return (
    <article className="card">
      <h2>
        <a {...linkTo(dataUrl(deployment, table.name))}>{table.name}</a>{" "}
        <span className="muted count">{formatCount(table.rows)} rows</span>
      </h2>
      <div className="cols">
        <table className="plain" aria-label={`Fields of ${table.name}`}>
          <thead>
            <tr>
              <th>Field</th>
              <th>Type</th>
            </tr>
          </thead>
          <tbody>
            {table.fields.map((field) => (
              <tr key={field.name}>
                <td>
                  <code>{field.name}</code>
                </td>
                <td>
                  <code className="type">{typeLabel(field)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <table className="plain" aria-label={`Indexes of ${table.name}`}>
          <thead>
            <tr>
              <th>Index</th>
              <th>Fields</th>
            </tr>
          </thead>
          <tbody>
            {table.indexes.map((index) => (
              <tr key={index.name}>
                <td>
                  <code>{index.name}</code>
                </td>
                <td>
                  <code>{[...index.fields, "createdAt"].join(", ")}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </article>
  );
}

/** A deployment's tables, each with its fields, indexes and exact row count. */
export function TablesPage({ deployment }: { deployment: string }) {
  const tables = useLoad(() => loadTables(deployment), deployment);
  const answer = tables.data;
  return (
    <section>
      <h1>
        Data of <code>{deployment}</code>
      </h1>
      {tables.error && (
        <p className="error" role="alert">
          {tables.error}
        </p>
      )}
      {answer && (
        <p className="muted">
          Database API {answer.apiVersion}. {answer.writable ? "You can edit rows." : "Read-only for you."}
          {answer.apiVersion === "legacy" && " A legacy deployment keeps no indexes: rows are listed by id."}
        </p>
      )}
      {answer && answer.tables.length === 0 && <p className="notice">This deployment declares no tables.</p>}
      {answer?.tables.map((table) => (
        <TableCard key={table.name} deployment={deployment} table={table} />
      ))}
    </section>
  );
}
