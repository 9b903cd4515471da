/**
 * `host/access`: every access rule of the product in one place. `access-policy.ts` holds the rules
 * as pure functions over plain facts; `credentials.ts` verifies secrets and feeds them the result.
 */
export {
  checkAppCall,
  checkClaimant,
  checkDataTransfer,
  checkDataWrite,
  checkEndpointCall,
  checkFunctionRun,
  checkHostBackup,
  checkLegacyQueryWrites,
  checkManage,
  checkObjectDelete,
  checkOperator,
  checkRestricted,
  checkStorageReader,
  checkStorageWriter,
  type DeploymentAccess,
  mayAutoSignIn,
  mayManage,
  mayWriteData,
  type ObjectDeleter,
  type OperatorCaller,
  OWNER_DELETE,
  ownerOfNewDeployment,
  ownsDeployment,
} from "./access-policy.js";
export {
  authoriseClaim,
  authoriseSessionRequest,
  authoriseStorageListing,
  type DeploymentSecrets,
  dashboardDeleteAllowed,
  type ListingVerifier,
} from "./credentials.js";
