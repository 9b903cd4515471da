/**
 * The thread the SVG and XML script check runs on (see markup-checker.ts): it reads the whole file
 * several ways, up to 200 ms for 5 MB, which the host's main thread must not spend.
 */
import { serveJobs } from "../threads/serve-jobs.js";
import { markupScriptReason } from "./markup-script.js";

serveJobs(markupScriptReason);
