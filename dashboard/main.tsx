/**
 * The dashboard's browser entry: reads who is signed in (and the session's CSRF token) from the
 * shell's data attributes and renders the app. Built by `npm run build` into hashed files.
 */
import { createRoot } from "react-dom/client";
import { setCsrfToken } from "./api.js";
import { App } from "./app.js";
import "./styles.css";

const root = document.getElementById("root") as HTMLElement;
setCsrfToken(root.dataset.csrf ?? "");
createRoot(root).render(<App name={root.dataset.name ?? ""} operator={root.dataset.operator === "1"} />);
