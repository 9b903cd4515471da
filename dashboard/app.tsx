import { type ReactNode, useEffect } from "react";
import { csrf } from "./api.js";
import { DeploymentsPage } from "./deployments.js";
import { FunctionsPage } from "./functions.js";
import { LogsPage } from "./logs.js";
import {
  dataUrl,
  functionsUrl,
  linkTo,
  logsUrl,
  navigate,
  type Route,
  settingsUrl,
  storageUrl,
  useRoute,
} from "./route.js";
import { RowsPage } from "./rows.js";
import { SettingsPage } from "./settings.js";
import { StoragePage } from "./storage.js";
import { TablesPage } from "./tables.js";

/** Who is signed in, as the shell told. */
interface Session {
  name: string;
  operator: boolean;
}

function title(route: Route): string {
  switch (route.page) {
    case "deployments":
      return "Deployments";
    case "tables":
      return `Data of ${route.deployment}`;
    case "rows":
      return `${route.table} of ${route.deployment}`;
    case "storage":
      return `Storage of ${route.deployment}`;
    case "settings":
      return `Settings of ${route.deployment}`;
    case "functions":
      return `Functions of ${route.deployment}`;
    case "logs":
      return `Logs of ${route.deployment}`;
    default:
      return "Not found";
  }
}

/** The header on every page: where you are, the deployment's sections, who you are, sign-out. */
function Header({ route, session }: { route: Route; session: Session }) {
  const deployment = "deployment" in route ? route.deployment : undefined;
  return (
    <header className="top">
      <nav aria-label="Main" className="crumbs">
        <a className="brand" {...linkTo("/dashboard")}>
          platform
        </a>
        <a {...linkTo("/dashboard")} aria-current={route.page === "deployments" ? "page" : undefined}>
          Deployments
        </a>
        {deployment !== undefined && (
          <>
            <span className="sep" aria-hidden="true">
              /
            </span>
            <code>{deployment}</code>
            <a {...linkTo(dataUrl(deployment))} aria-current={route.page === "tables" ? "page" : undefined}>
              Data
            </a>
            <a
              {...linkTo(functionsUrl(deployment))}
              aria-current={route.page === "functions" ? "page" : undefined}
            >
              Functions
            </a>
            <a {...linkTo(logsUrl(deployment))} aria-current={route.page === "logs" ? "page" : undefined}>
              Logs
            </a>
            <a
              {...linkTo(storageUrl(deployment))}
              aria-current={route.page === "storage" ? "page" : undefined}
            >
              Storage
            </a>
            <a
              {...linkTo(settingsUrl(deployment))}
              aria-current={route.page === "settings" ? "page" : undefined}
            >
              Settings
            </a>
          </>
        )}
      </nav>
      <form method="post" action="/dashboard/logout" className="who">
        <span>{session.operator ? "Operator" : session.name}</span>
        <input type="hidden" name="csrf" value={csrf()} />
        <button type="submit">Sign out</button>
      </form>
    </header>
  );
}

/** The whole app: the header and the page of the current route. */
export function App(session: Session) {
  const route = useRoute();
  useEffect(() => {
    document.title = `${title(route)} · platform`;
    if (
      route.page === "tables" &&
      location.pathname.replace(/\/+$/, "").endsWith(`/deploys/${encodeURIComponent(route.deployment)}`)
    )
      navigate(dataUrl(route.deployment), true);
  }, [route]);
  let body: ReactNode;
  switch (route.page) {
    case "deployments":
      body = <DeploymentsPage operator={session.operator} />;
      break;
    case "tables":
      body = <TablesPage deployment={route.deployment} />;
      break;
    case "rows":
      body = <RowsPage key={`${route.deployment}/${route.table}`} route={route} />;
      break;
    case "storage":
      body = <StoragePage key={route.deployment} deployment={route.deployment} />;
      break;
    case "settings":
      body = <SettingsPage key={route.deployment} deployment={route.deployment} />;
      break;
    case "functions":
      body = <FunctionsPage key={route.deployment} deployment={route.deployment} />;
      break;
    case "logs":
      body = <LogsPage key={route.deployment} deployment={route.deployment} />;
      break;
    default:
      body = (
        <section>
          <h1>Not found</h1>
          <p>
            No dashboard page here. <a {...linkTo("/dashboard")}>All deployments</a>
          </p>
        </section>
      );
  }
  return (
    <>
      <Header route={route} session={session} />
      <main>{body}</main>
    </>
  );
}
