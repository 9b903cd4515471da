import { useEffect, useState } from "react";

/** Where the dashboard is: every page has a URL that can be bookmarked and shared. */
export type Route =
  | { page: "deployments" }
  | { page: "tables"; deployment: string }
  | { page: "rows"; deployment: string; table: string; params: URLSearchParams }
  | { page: "storage"; deployment: string }
  | { page: "settings"; deployment: string }
  | { page: "functions"; deployment: string }
  | { page: "logs"; deployment: string }
  | { page: "missing" };

/** The route of a location (`/dashboard/...` path and query). */
export function parseRoute(pathname: string, search: string): Route {
  const parts = pathname.replace(/\/+$/, "").split("/").slice(1).map(decodeURIComponent);
  if (parts[0] !== "dashboard") return { page: "missing" };
  if (parts.length === 1) return { page: "deployments" };
  const [, deploys, deployment, section, table] = parts;
  if (deploys !== "deploys" || !deployment) return { page: "missing" };
  if (section === undefined || (section === "data" && table === undefined))
    return { page: "tables", deployment };
  if (section === "data" && table !== undefined && parts.length === 5)
    return { page: "rows", deployment, table, params: new URLSearchParams(search) };
  if (
    (section === "storage" || section === "settings" || section === "functions" || section === "logs") &&
    parts.length === 4
  )
    return { page: section, deployment };
  return { page: "missing" };
}

/** The URL of a deployment's data pages. */
export function dataUrl(deployment: string, table?: string, params?: URLSearchParams): string {
  const base = `/dashboard/deploys/${encodeURIComponent(deployment)}/data`;
  if (table === undefined) return base;
  const query = params?.toString();
  return `${base}/${encodeURIComponent(table)}${query ? `?${query}` : ""}`;
}

/** The storage page of a deployment. */
export function storageUrl(deployment: string): string {
  return `/dashboard/deploys/${encodeURIComponent(deployment)}/storage`;
}

/** The settings page of a deployment. */
export function settingsUrl(deployment: string): string {
  return `/dashboard/deploys/${encodeURIComponent(deployment)}/settings`;
}

/** The function runner of a deployment. */
export function functionsUrl(deployment: string): string {
  return `/dashboard/deploys/${encodeURIComponent(deployment)}/functions`;
}

/** The live logs and per-handler figures of a deployment. */
export function logsUrl(deployment: string): string {
  return `/dashboard/deploys/${encodeURIComponent(deployment)}/logs`;
}

const listeners = new Set<() => void>();

/** The route of the page's location now. */
function currentRoute(): Route {
  return parseRoute(location.pathname, location.search);
}

/** Goes to `url` inside the app (a history entry, unless `replace`). */
export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  for (const listener of listeners) listener();
}

/** The current route, re-rendered on `navigate` and on the browser's back and forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return route;
}

/**
 * Props for an in-app link: a real `href` (open in a new tab, copy, keyboard) whose plain click
 * navigates without reloading the page.
 */
export function linkTo(url: string): { href: string; onClick: (event: React.MouseEvent) => void } {
  return {
    href: url,
    onClick: (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      navigate(url);
    },
  };
}
