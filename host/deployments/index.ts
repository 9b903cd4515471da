/** `host/deployments`: deployment records, artifacts, the deploy pipeline and handler calls. */
export { checkDeclaration } from "./declaration.js";
export {
  type Call,
  type CallResult,
  checkAccess,
  checkDeploymentId,
  type DeployInput,
  Deployments,
  type DeployResult,
} from "./deployments.js";
export { LOG_LIMITS, LogHub, type LogLine, redactSecrets } from "./log-hub.js";
export { type ArtifactRecord, type DeploymentRecord, publicView } from "./records.js";
