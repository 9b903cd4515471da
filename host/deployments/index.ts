/** `host/deployments`: deployment records, artifacts, the deploy pipeline and handler calls. */
export type { Call, CallResult } from "./call-execution.js";
export type { CallObserver } from "./call-observer.js";
export type { ClientManifestEntry, FoundClientFile } from "./client-files.js";
export { type ClientFileInput, checkClientPath } from "./client-input.js";
export { type DataActor, DataConsole } from "./data-console.js";
export { checkDeclaration } from "./declaration.js";
export type { DeployGuard, DeployInput, DeployResult } from "./deploy-pipeline.js";
export { DeploymentService } from "./deployment-service.js";
export { parseIdempotencyKey } from "./idempotency.js";
export type { DeploymentImport, ImportedSettings, LoadedCode } from "./imported-deployment.js";
export { LogHub, type LogLine } from "./log-hub.js";
export { formatRequestId } from "./log-line.js";
export type { OwnerCap } from "./owner-cap.js";
export { Quarantine, quarantine } from "./quarantine.js";
export {
  type ArtifactRecord,
  type ClientRef,
  checkDeploymentId,
  type DeploymentRecord,
  isDeploymentId,
  publicView,
  storageQuotaOwner,
  summaryView,
} from "./records.js";
export { redactSecrets } from "./redact.js";
export type { DeploymentScopedState, StillAllowed } from "./removal.js";
