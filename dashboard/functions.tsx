import { type FormEvent, useState } from "react";
import type {
  FunctionsAnswer,
  RunAnswer,
  RunIdentity,
  RunRequest,
} from "../sdk/protocol/dashboard-functions.js";
import { ApiError, api, deployPath } from "./api.js";
import { useLoad } from "./load.js";
import { UsageTable } from "./usage-table.js";

type Runnable = { kind: "query" | "mutation"; name: string };
type Who = RunIdentity["kind"];

/** Every handler of the deployment by kind and name; queries and mutations can be picked to run. */
function FunctionList({ functions, onPick }: { functions: FunctionsAnswer; onPick: (f: Runnable) => void }) {
  const rows = [
    ...functions.queries.map((name) => ({ kind: "query" as const, name })),
    ...functions.mutations.map((name) => ({ kind: "mutation" as const, name })),
  ];
  return (
    <div className="scroll">
      <table className="grid" aria-label={`Functions of ${functions.deployment}`}>
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Name</th>
            <th scope="col">Route</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={`${row.kind}:${row.name}`}>
              <td>{row.kind}</td>
              <td>
                <button type="button" className="link" onClick={() => onPick(row)}>
                  {row.name}
                </button>
              </td>
              <td className="muted">
                {row.kind === "query" ? "POST /api/query/" : "POST /api/mutation/"}
                {row.name}
              </td>
            </tr>
          ))}
          {functions.endpoints.map((endpoint) => (
            <tr key={`endpoint:${endpoint.name}`}>
              <td>endpoint</td>
              <td>{endpoint.name}</td>
              <td className="muted">
                {endpoint.method} {endpoint.path}
                {endpoint.readOnly ? " (read only)" : ""}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What a run gave: its value or its error, then its usage against the limits. */
function RunResult({ answer }: { answer: RunAnswer }) {
  const who = answer.identity.userId ?? "anonymous";
  return (
    <section className="card" aria-labelledby="result-title">
      <h2 id="result-title">Result</h2>
      <p className="muted">As {answer.identity.email ?? who}</p>
      {answer.outcome === "ok" ? (
        <pre className="json result-value">{JSON.stringify(answer.value, null, 2)}</pre>
      ) : (
        <p className="error" role="alert">
          <code>{answer.error?.code}</code>: {answer.error?.message}
        </p>
      )}
      {answer.usage ? (
        <UsageTable usage={answer.usage} limits={answer.limits} />
      ) : (
        <p className="muted">Refused before it ran: no usage.</p>
      )}
    </section>
  );
}

/** The runner: a query or mutation, JSON arguments, and who to run it as. */
function Runner({ functions, picked }: { functions: FunctionsAnswer; picked: Runnable | undefined }) {
  const all: Runnable[] = [
    ...functions.queries.map((name) => ({ kind: "query" as const, name })),
    ...functions.mutations.map((name) => ({ kind: "mutation" as const, name })),
  ];
  const [chosen, setChosen] = useState<string>("");
  const [who, setWho] = useState<Who>("guest");
  const [guest, setGuest] = useState("");
  const [email, setEmail] = useState("");
  const [args, setArgs] = useState("{}");
  const [answer, setAnswer] = useState<RunAnswer>();
  const [failure, setFailure] = useState<string>();
  const [running, setRunning] = useState(false);
  const selected =
    picked && chosen === ""
      ? `${picked.kind}:${picked.name}`
      : chosen || (all[0] ? `${all[0].kind}:${all[0].name}` : "");
  async function run(event: FormEvent) {
    event.preventDefault();
    setFailure(undefined);
    let parsed: unknown;
    try {
      parsed = args.trim() === "" ? {} : JSON.parse(args);
    } catch {
      setFailure('The arguments must be JSON, e.g. {} or {"limit": 10}.');
      return;
    }
    const [kind, ...name] = selected.split(":");
    const as: RunIdentity =
      who === "anonymous"
        ? { kind: who }
        : who === "guest"
          ? { kind: who, name: guest }
          : { kind: who, email };
    setRunning(true);
    try {
      const body: RunRequest = { kind: kind as Runnable["kind"], name: name.join(":"), args: parsed, as };
      setAnswer(await api<RunAnswer>(deployPath(functions.deployment, "/run"), { method: "POST", body }));
    } catch (error) {
      setAnswer(undefined);
      setFailure(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error));
    } finally {
      setRunning(false);
    }
  }
  if (!functions.runnable)
    return (
      <p className="muted">
        Functions of this deployment are run from here by its owner only (the operator on unclaimed
        deployments).
      </p>
    );
  return (
    <>
      <form className="card runner" onSubmit={run} aria-labelledby="runner-title">
        <h2 id="runner-title">Run</h2>
        <p>
          <label>
            Function{" "}
            <select aria-label="Function" value={selected} onChange={(e) => setChosen(e.target.value)}>
              {all.map((f) => (
                <option key={`${f.kind}:${f.name}`} value={`${f.kind}:${f.name}`}>
                  {f.kind} {f.name}
                </option>
              ))}
            </select>
          </label>
        </p>
        <fieldset>
          <legend>As</legend>
          {(["anonymous", "guest", "account"] as const).map((kind) => (
            <label key={kind}>
              <input
                type="radio"
                name="who"
                value={kind}
                checked={who === kind}
                onChange={() => setWho(kind)}
              />{" "}
              {kind === "anonymous" ? "Anonymous" : kind === "guest" ? "A guest" : "An account"}
            </label>
          ))}
          {who === "guest" && (
            <label>
              Guest name{" "}
              <input value={guest} placeholder="dashboard" onChange={(e) => setGuest(e.target.value)} />
            </label>
          )}
          {who === "account" && (
            <label>
              Email <input type="email" value={email} required onChange={(e) => setEmail(e.target.value)} />
            </label>
          )}
        </fieldset>
        <p>
          <label>
            Arguments (JSON)
            <br />
            <textarea
              className="json"
              rows={5}
              value={args}
              spellCheck={false}
              onChange={(e) => setArgs(e.target.value)}
            />
          </label>
        </p>
        <p className="actions">
          <button type="submit" className="primary" disabled={running || selected === ""}>
            Run
          </button>
        </p>
        {failure && (
          <p className="error" role="alert">
            {failure}
          </p>
        )}
      </form>
      {answer && <RunResult answer={answer} />}
    </>
  );
}

/** `/dashboard/deploys/<id>/functions`: every handler, and the runner. */
export function FunctionsPage({ deployment }: { deployment: string }) {
  const loaded = useLoad(() => api<FunctionsAnswer>(deployPath(deployment, "/functions")), deployment);
  const [picked, setPicked] = useState<Runnable>();
  const functions = loaded.data;
  return (
    <section>
      <h1>Functions of {deployment}</h1>
      {loaded.error && (
        <p className="error" role="alert">
          {loaded.error}
        </p>
      )}
      {functions && (
        <div className="cols">
          <FunctionList functions={functions} onPick={setPicked} />
          <Runner key={picked ? `${picked.kind}:${picked.name}` : ""} functions={functions} picked={picked} />
        </div>
      )}
    </section>
  );
}
