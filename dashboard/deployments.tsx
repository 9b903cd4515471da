import type { DeploymentTotals } from "../sdk/protocol/dashboard.js";
import { api, deployPath } from "./api.js";
import { formatAge, formatSize } from "./format.js";
import { useLoad } from "./load.js";
import { Owner, type OwnerFields } from "./owner.js";
import { dataUrl, linkTo, storageUrl } from "./route.js";

/**
 * The listing this page reads (and main.tsx asks for early): only what it shows, not what each
 * developer declares (handler and env names, approved emails: megabytes a deployment at most).
 */
export const DEPLOYMENTS_LIST = "/v1/deploys?view=summary";

/** A deployment as `GET /v1/deploys?view=summary` shows it (the fields this page reads). */
interface Deployment extends OwnerFields {
  id: string;
  claimed: boolean;
  restricted: boolean;
  apiVersion: number;
  updatedAt: number;
}

function Status({ deployment }: { deployment: Deployment }) {
  if (!deployment.claimed) return <span className="badge warn">unclaimed</span>;
  if (deployment.restricted) return <span className="badge">restricted</span>;
  return <span className="badge ok">claimed</span>;
}

/** One deployment's row and storage totals, loaded on their own so the list shows at once. */
function Totals({ id }: { id: string }) {
  const totals = useLoad(() => api<DeploymentTotals>(deployPath(id, "/totals")), id);
  if (totals.error)
    return (
      <td colSpan={2} className="muted">
        {totals.error}
      </td>
    );
  const t = totals.data;
  return (
    <>
      <td className="num">{t ? (t.rows === null ? "many" : t.rows.toLocaleString("en")) : "…"}</td>
      <td className="num">{t ? `${t.objects.toLocaleString("en")} · ${formatSize(t.bytes)}` : "…"}</td>
    </>
  );
}

/** The deployments the signed-in person manages (the operator: every one), with links to each. */
export function DeploymentsPage({ operator }: { operator: boolean }) {
  const list = useLoad(() => api<{ deploys: Deployment[] }>(DEPLOYMENTS_LIST), "deploys");
  const appUrl = (id: string) => `${location.protocol}//${id}.${location.host}`;
  const deploys = list.data?.deploys ?? [];
  return (
    <section>
      <h1>Deployments</h1>
      <p className="muted">
        {operator ? "Every deployment on this host" : "Your deployments"}
        {list.data ? `: ${deploys.length}` : ""}
      </p>
      {list.error && (
        <p className="error" role="alert">
          {list.error}
        </p>
      )}
      {list.data && deploys.length === 0 && (
        <p className="notice">
          No deployments yet. Deploy one with <code>platform deploy</code>.
        </p>
      )}
      {deploys.length > 0 && (
        <div className="scroll">
          <table className="grid" aria-label="Deployments">
            <thead>
              <tr>
                <th>Id</th>
                <th>Owner</th>
                <th>Status</th>
                <th>API</th>
                <th>Last deploy</th>
                <th className="num">Rows</th>
                <th className="num">Files</th>
                <th>Open</th>
              </tr>
            </thead>
            <tbody>
              {deploys.map((d) => (
                <tr key={d.id}>
                  <td>
                    <a {...linkTo(dataUrl(d.id))}>
                      <code>{d.id}</code>
                    </a>
                  </td>
                  <td>
                    <Owner deployment={d} />
                  </td>
                  <td>
                    <Status deployment={d} />
                  </td>
                  <td>{d.apiVersion === 0 ? "legacy" : "v1"}</td>
                  <td title={new Date(d.updatedAt).toISOString()}>{formatAge(d.updatedAt)}</td>
                  <Totals id={d.id} />
                  <td className="links">
                    <a {...linkTo(dataUrl(d.id))}>Data</a> <a href={storageUrl(d.id)}>Storage</a>{" "}
                    <a href={appUrl(d.id)}>App</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
