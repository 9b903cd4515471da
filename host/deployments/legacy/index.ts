/** `host/deployments/legacy`: running apiVersion 0 handlers (the snapshot runtime's request loop). */
export { asLegacyRequest, isLegacyRequest, type LegacyRequest, runLegacy } from "./run-legacy.js";
