import { type FormEvent, useEffect, useState } from "react";
import { ApiError, api, deployPath } from "./api.js";
import { formatTime } from "./format.js";
import { useLoad } from "./load.js";
import { Owner, type OwnerFields } from "./owner.js";
import { navigate } from "./route.js";

/** A deployment as `GET /v1/deploys/<id>` shows it (the fields this page reads). */
interface DeploymentSettings extends OwnerFields {
  id: string;
  claimed: boolean;
  restricted: boolean;
  approved: string[];
  envNames: string[];
  createdAt: number;
  updatedAt: number;
}

/** What a save or delete said: nothing yet, done, or the host's error. */
type Outcome = { ok: true; message: string } | { ok: false; message: string } | undefined;

function failure(error: unknown): Outcome {
  return {
    ok: false,
    message: error instanceof ApiError ? `${error.code}: ${error.message}` : String(error),
  };
}

function OutcomeLine({ outcome }: { outcome: Outcome }) {
  if (!outcome) return null;
  return outcome.ok ? (
    <p className="notice" role="status">
      {outcome.message}
    </p>
  ) : (
    <p className="error" role="alert">
      {outcome.message}
    </p>
  );
}

/** The approved emails as typed: one a line (commas and spaces also separate), blanks dropped. */
function emailsOf(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((email) => email.trim())
    .filter((email) => email !== "");
}

/** Restricted on/off and the approved emails, saved together with `PATCH /v1/deploys/<id>`. */
function AccessCard({ deployment, onSaved }: { deployment: DeploymentSettings; onSaved: () => void }) {
  const [restricted, setRestricted] = useState(deployment.restricted);
  const [approved, setApproved] = useState(deployment.approved.join("\n"));
  const [outcome, setOutcome] = useState<Outcome>();
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    setRestricted(deployment.restricted);
    setApproved(deployment.approved.join("\n"));
  }, [deployment]);
  async function save(event: FormEvent) {
    event.preventDefault();
    setSaving(true);
    try {
      await api(deployPath(deployment.id), {
        method: "PATCH",
        body: { restricted, approved: emailsOf(approved) },
      });
      setOutcome({ ok: true, message: "Saved." });
      onSaved();
    } catch (error) {
      setOutcome(failure(error));
    } finally {
      setSaving(false);
    }
  }
  return (
    <form className="card" onSubmit={save} aria-labelledby="access-title">
      <h2 id="access-title">Access</h2>
      <p>
        <label>
          <input type="checkbox" checked={restricted} onChange={(e) => setRestricted(e.target.checked)} />{" "}
          Restricted: only the approved accounts below may use the app (queries, mutations, endpoints,
          storage)
        </label>
      </p>
      <p>
        <label>
          Approved emails (one a line)
          <br />
          <textarea
            rows={5}
            cols={40}
            value={approved}
            onChange={(e) => setApproved(e.target.value)}
            spellCheck={false}
          />
        </label>
      </p>
      <p className="actions">
        <button type="submit" className="primary" disabled={saving}>
          Save access
        </button>
      </p>
      <OutcomeLine outcome={outcome} />
    </form>
  );
}

/** The server-only env variables by name; their values never leave the host. */
function EnvCard({ names }: { names: string[] }) {
  return (
    <section className="card" aria-labelledby="env-title">
      <h2 id="env-title">Env variables</h2>
      {names.length === 0 ? (
        <p className="muted">None. Put them in .env.platform.server and deploy.</p>
      ) : (
        <ul aria-label="Env variable names">
          {names.map((name) => (
            <li key={name}>
              <code>{name}</code>
            </li>
          ))}
        </ul>
      )}
      <p className="muted">
        Only the names are shown; values stay on the host (handlers read them as ctx.env). Change them by
        deploying with a new .env.platform.server.
      </p>
    </section>
  );
}

/** Who owns the deployment, or how an unclaimed one is claimed. */
function ClaimCard({ deployment }: { deployment: DeploymentSettings }) {
  return (
    <section className="card" aria-labelledby="claim-title">
      <h2 id="claim-title">Claim</h2>
      {deployment.claimed ? (
        <p>
          <span className="badge ok">claimed</span> Owned by <Owner deployment={deployment} />.
        </p>
      ) : (
        <p>
          <span className="badge warn">unclaimed</span> No developer owns it yet. Its developer claims it with
          the claim token printed when it was deployed: <code>POST /v1/deploys/{deployment.id}/claim</code>{" "}
          with a developer token.
        </p>
      )}
      <p className="muted">
        Created {formatTime(deployment.createdAt)}, last changed {formatTime(deployment.updatedAt)}.
      </p>
    </section>
  );
}

/** Deletes the deployment once its id is typed, then goes back to the list. */
function DeleteCard({ id }: { id: string }) {
  const [typed, setTyped] = useState("");
  const [outcome, setOutcome] = useState<Outcome>();
  const [deleting, setDeleting] = useState(false);
  async function remove(event: FormEvent) {
    event.preventDefault();
    if (typed !== id) return;
    setDeleting(true);
    try {
      await api(deployPath(id), { method: "DELETE" });
      navigate("/dashboard");
    } catch (error) {
      setOutcome(failure(error));
      setDeleting(false);
    }
  }
  return (
    <form className="card danger-zone" onSubmit={remove} aria-labelledby="delete-title">
      <h2 id="delete-title">Delete deployment</h2>
      <p>
        Deletes <code>{id}</code> and everything it stored: every row, every file, its sessions and its web
        client. This cannot be undone; export it first (<code>platform export {id}</code>) to keep a copy.
      </p>
      <p>
        <label>
          Type <code>{id}</code> to confirm
          <br />
          <input
            value={typed}
            onChange={(e) => setTyped(e.target.value)}
            autoComplete="off"
            spellCheck={false}
          />
        </label>
      </p>
      <p className="actions">
        <button type="submit" className="danger" disabled={typed !== id || deleting}>
          Delete {id}
        </button>
      </p>
      <OutcomeLine outcome={outcome} />
    </form>
  );
}

/** A deployment's settings: access, env variable names, claim status, deletion. */
export function SettingsPage({ deployment }: { deployment: string }) {
  const loaded = useLoad(() => api<DeploymentSettings>(deployPath(deployment)), deployment);
  return (
    <section>
      <h1>
        Settings of <code>{deployment}</code>
      </h1>
      {loaded.error && (
        <p className="error" role="alert">
          {loaded.error}
        </p>
      )}
      {loaded.data && (
        <>
          <AccessCard deployment={loaded.data} onSaved={loaded.reload} />
          <EnvCard names={loaded.data.envNames} />
          <ClaimCard deployment={loaded.data} />
          <DeleteCard id={loaded.data.id} />
        </>
      )}
    </section>
  );
}
