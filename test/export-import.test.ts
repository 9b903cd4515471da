/**
 * Export and import of one deployment on the embedded store (classic-level): the shared round-trip
 * suite (exact copies, a legacy deployment, one snapshot under writes, refusals).
 */
import { exportImportSuite } from "./helpers/export-import-suite.js";
import { startTestHost } from "./helpers/host.js";

exportImportSuite("classic-level", () => startTestHost());
