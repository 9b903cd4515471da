import { useState } from "react";
import type { TableInfo } from "../sdk/protocol/dashboard.js";
import { boundField, eqOf, type Filter, mayBeAbsent, rangeFields, withEq } from "./filter.js";

interface FilterBarProps {
  table: TableInfo;
  filter: Filter;
  onApply: (filter: Filter) => void;
}

/**
 * The rows filter, built like `withIndex`: pick an index and an order, give equalities on its
 * fields in order, then bounds on the next one. Applying it changes the page's URL.
 */
export function FilterBar({ table, filter, onApply }: FilterBarProps) {
  const [draft, setDraft] = useState<Filter>(filter);
  const index = table.indexes.find((i) => i.name === draft.index);
  const fields = rangeFields(index);
  const bound = boundField(draft, index);
  const set = (change: Partial<Filter>) => setDraft({ ...draft, ...change });
  const setEq = (field: string, text: string | null) =>
    set({ eq: withEq(draft.eq, field, text === "" ? undefined : text) });
  return (
    <form
      className="filter"
      aria-label="Filter rows"
      onSubmit={(event) => {
        event.preventDefault();
        onApply(draft);
      }}
    >
      <label>
        Index
        <select
          name="index"
          value={draft.index}
          onChange={(event) => setDraft({ index: event.target.value, order: draft.order, eq: {} })}
        >
          {table.indexes.map((i) => (
            <option key={i.name} value={i.name}>
              {i.name} ({[...i.fields, "createdAt"].join(", ")})
            </option>
          ))}
        </select>
      </label>
      <label>
        Order
        <select
          name="order"
          value={draft.order}
          onChange={(event) => set({ order: event.target.value === "asc" ? "asc" : "desc" })}
        >
          <option value="desc">descending</option>
          <option value="asc">ascending</option>
        </select>
      </label>
      {fields.map((field) => (
        <div key={field} className="equality">
          <label>
            {field} =
            <input
              name={`eq.${field}`}
              value={eqOf(draft, field) ?? ""}
              placeholder={eqOf(draft, field) === null ? "absent" : "any"}
              disabled={eqOf(draft, field) === null}
              onChange={(event) => setEq(field, event.target.value)}
            />
          </label>
          {mayBeAbsent(table, field) && (
            <label className="check">
              <input
                type="checkbox"
                name={`absent.${field}`}
                aria-label={`${field} is absent`}
                checked={eqOf(draft, field) === null}
                onChange={(event) => setEq(field, event.target.checked ? null : "")}
              />
              absent
            </label>
          )}
        </div>
      ))}
      {bound !== undefined && (
        <fieldset className="bounds">
          <legend>Range on {bound}</legend>
          <select
            aria-label="Lower bound comparison"
            value={draft.lower?.op ?? "gte"}
            onChange={(event) =>
              set({
                lower: { op: event.target.value === "gt" ? "gt" : "gte", text: draft.lower?.text ?? "" },
              })
            }
          >
            <option value="gte">≥</option>
            <option value="gt">&gt;</option>
          </select>
          <input
            aria-label={`Lower bound of ${bound}`}
            name="lower"
            value={draft.lower?.text ?? ""}
            placeholder="from"
            onChange={(event) => {
              const text = event.target.value;
              const { lower: _, ...rest } = draft;
              setDraft(text === "" ? rest : { ...draft, lower: { op: draft.lower?.op ?? "gte", text } });
            }}
          />
          <select
            aria-label="Upper bound comparison"
            value={draft.upper?.op ?? "lte"}
            onChange={(event) =>
              set({
                upper: { op: event.target.value === "lt" ? "lt" : "lte", text: draft.upper?.text ?? "" },
              })
            }
          >
            <option value="lte">≤</option>
            <option value="lt">&lt;</option>
          </select>
          <input
            aria-label={`Upper bound of ${bound}`}
            name="upper"
            value={draft.upper?.text ?? ""}
            placeholder="to"
            onChange={(event) => {
              const text = event.target.value;
              const { upper: _, ...rest } = draft;
              setDraft(text === "" ? rest : { ...draft, upper: { op: draft.upper?.op ?? "lte", text } });
            }}
          />
        </fieldset>
      )}
      <div className="actions">
        <button type="submit" className="primary">
          Apply
        </button>
        <button type="button" onClick={() => onApply({ index: "by_creation", order: "desc", eq: {} })}>
          Clear
        </button>
      </div>
    </form>
  );
}
