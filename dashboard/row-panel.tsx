import { useEffect, useRef, useState } from "react";
import type { TableInfo } from "../sdk/protocol/dashboard.js";
import { api, deployPath } from "./api.js";
import { CopyButton } from "./copy.js";
import { formatTime } from "./format.js";
import { editableJson, parseObject, patchOf, type Row } from "./row-json.js";

interface PanelProps {
  deployment: string;
  table: TableInfo;
  /** The row shown; undefined when inserting a new one. */
  row: Row | undefined;
  writable: boolean;
  onClose: () => void;
  /** After a write: the row written (undefined after a delete). */
  onChanged: (row: Row | undefined) => void;
}

/**
 * The side panel of one row: its JSON, its id to copy, and for the owner an editor (JSON of the
 * row's fields, sent as an insert or an update that the host validates as a mutation) and delete.
 */
export function RowPanel({ deployment, table, row, writable, onClose, onChanged }: PanelProps) {
  const [editing, setEditing] = useState(row === undefined);
  const [text, setText] = useState(() => editableJson(table, row));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  const rowsPath = deployPath(deployment, `/tables/${encodeURIComponent(table.name)}/rows`);

  const save = async () => {
    const parsed = parseObject(text);
    if (typeof parsed === "string") {
      setError(parsed);
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const answer = row
        ? await api<{ row: Row }>(`${rowsPath}/${encodeURIComponent(String(row.id))}`, {
            method: "PATCH",
            body: patchOf(row, parsed, table),
          })
        : await api<{ row: Row }>(rowsPath, { method: "POST", body: parsed });
      setEditing(false);
      onChanged(answer.row);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    if (!row || !window.confirm(`Delete row ${String(row.id)} of ${table.name}? This cannot be undone.`))
      return;
    setBusy(true);
    try {
      await api(`${rowsPath}/${encodeURIComponent(String(row.id))}`, { method: "DELETE" });
      onChanged(undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
      setBusy(false);
    }
  };

  return (
    <aside className="panel" aria-label={row ? `Row ${String(row.id)}` : "New row"}>
      <div className="panel-head">
        <h2 tabIndex={-1} ref={heading}>
          {row ? "Row" : `New row in ${table.name}`}
        </h2>
        <button type="button" onClick={onClose} aria-label="Close row panel">
          Close
        </button>
      </div>
      {row && (
        <p className="row-id">
          <code>{String(row.id)}</code>{" "}
          <CopyButton text={String(row.id)} label={`Copy id ${String(row.id)}`} />
          <br />
          <span className="muted">created {formatTime(Number(row.createdAt))}</span>
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {editing ? (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <label htmlFor="row-json">Fields as JSON (a removed optional field is cleared)</label>
          <textarea
            id="row-json"
            className="json"
            spellCheck={false}
            value={text}
            rows={Math.min(20, text.split("\n").length + 2)}
            onChange={(event) => setText(event.target.value)}
          />
          <div className="actions">
            <button type="submit" className="primary" disabled={busy}>
              {row ? "Save" : "Insert"}
            </button>
            {row && (
              <button type="button" onClick={() => setEditing(false)} disabled={busy}>
                Cancel
              </button>
            )}
          </div>
        </form>
      ) : (
        row && (
          <>
            <section aria-label="Row as JSON">
              <pre className="json">{JSON.stringify(row, null, 2)}</pre>
            </section>
            <div className="actions">
              <CopyButton text={JSON.stringify(row, null, 2)} label="Copy row JSON" />
              {writable && (
                <>
                  <button
                    type="button"
                    className="primary"
                    onClick={() => {
                      setText(editableJson(table, row));
                      setEditing(true);
                    }}
                  >
                    Edit
                  </button>
                  <button type="button" className="danger" onClick={() => void remove()} disabled={busy}>
                    Delete
                  </button>
                </>
              )}
            </div>
          </>
        )
      )}
    </aside>
  );
}
