/**
 * `host/access`: every access rule of the product in one place. `app-access.ts` (app users) and
 * `operator-access.ts` (the operator API, the dashboard) hold the rules as pure functions over
 * plain facts; `credentials.ts` verifies secrets and feeds them the result.
 */
export {
  checkAppCall,
  checkEndpointCall,
  checkLegacyQueryWrites,
  checkObjectDelete,
  checkRestricted,
  checkSignIn,
  checkStorageReader,
  checkStorageWriter,
  type DeploymentAccess,
  type ObjectDeleter,
  OWNER_DELETE,
} from "./app-access.js";
export {
  authoriseClaim,
  authoriseSessionRequest,
  authoriseStorageListing,
  type DeploymentSecrets,
  dashboardDeleteAllowed,
  type ListingVerifier,
} from "./credentials.js";
export {
  checkClaimant,
  checkDataTransfer,
  checkDataWrite,
  checkFunctionRun,
  checkHostBackup,
  checkManage,
  checkNewDeploymentId,
  checkOperator,
  mayAutoSignIn,
  mayManage,
  mayWriteData,
  type OperatorCaller,
  ownerOfNewDeployment,
  ownsDeployment,
  RESERVED_DEPLOYMENT_IDS,
} from "./operator-access.js";
