/**
 * The dashboard's browser entry: reads who is signed in (and the session's CSRF token) from the
 * shell's data attributes and renders the app. Built by `npm run build` into hashed files.
 */
import { createRoot } from "react-dom/client";
import { deployPath, setCsrfToken, startEarly } from "./api.js";
import { App } from "./app.js";
import { DEPLOYMENTS_LIST } from "./deployments.js";
import "./styles.css";

const root = document.getElementById("root") as HTMLElement;
setCsrfToken(root.dataset.csrf ?? "");
// The deployments list is the first page: ask for it while React starts, and for each
// deployment's totals as soon as the list arrives, before React has drawn it.
if (location.pathname === "/dashboard" || location.pathname === "/dashboard/")
  startEarly<{ deploys: Array<{ id: string }> }>(DEPLOYMENTS_LIST).then(
    (list) => {
      for (const { id } of list.deploys) startEarly(deployPath(id, "/totals"));
    },
    () => undefined,
  );
createRoot(root).render(<App name={root.dataset.name ?? ""} operator={root.dataset.operator === "1"} />);
