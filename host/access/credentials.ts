import { type Developers, matchesHash, sameSecret } from "../auth/index.js";
import { checkStorageListing, type ListingCredential } from "./app-access.js";
import {
  checkClaim,
  checkSessionRequest,
  mayDeleteFromDashboard,
  type OperatorCaller,
} from "./operator-access.js";

/** What the credential checks read of a deployment (a `DeploymentRecord` is one). */
export interface DeploymentSecrets {
  readonly id: string;
  readonly owner: string | null;
  /** SHA-256 of the claim token, while the deployment is unclaimed. */
  readonly claimTokenHash?: string;
}

/** The host-wide secrets the inspect route accepts besides the deployment's claim token. */
export interface ListingVerifier {
  readonly adminToken: string;
  readonly developers: Developers;
}

/** Which credential `token` is, checked in order (a developer token is looked up only if needed). */
async function listingCredentialOf(
  token: string,
  deployment: DeploymentSecrets,
  verifier: ListingVerifier,
): Promise<ListingCredential> {
  if (sameSecret(token, verifier.adminToken)) return "operator";
  if (deployment.claimTokenHash !== undefined && matchesHash(token, deployment.claimTokenHash))
    return "claim token";
  if (deployment.owner !== null && (await verifier.developers.authenticate(token))?.id === deployment.owner)
    return "owner";
  return "none";
}

/**
 * The inspect route's rule ({@link checkStorageListing}) for the token a request carried: verifies
 * it against the operator's token, the claim token and the owner's developer tokens. `platform dev`
 * checks nothing.
 */
export async function authoriseStorageListing(
  token: string | undefined,
  deployment: DeploymentSecrets,
  dev: boolean,
  verifier: ListingVerifier,
): Promise<void> {
  const credential =
    dev || token === undefined ? "none" : await listingCredentialOf(token, deployment, verifier);
  checkStorageListing(dev, Boolean(token), credential);
}

/** The claim rule ({@link checkClaim}) for the claim token a developer sent (any JSON value). */
export function authoriseClaim(deployment: DeploymentSecrets, claimToken: unknown): void {
  const matches =
    typeof claimToken === "string" &&
    !!deployment.claimTokenHash &&
    matchesHash(claimToken, deployment.claimTokenHash);
  checkClaim(deployment, matches);
}

/**
 * The dashboard's delete rule ({@link mayDeleteFromDashboard}) for a form post: who is signed in
 * (if anyone), the session's CSRF token and the one the form sent.
 */
export function dashboardDeleteAllowed<D extends { readonly owner: string | null }>(
  who: OperatorCaller | undefined,
  sessionCsrf: string | undefined,
  sentCsrf: string | null,
  deployment: D | undefined,
): deployment is D {
  const csrfValid = sessionCsrf !== undefined && sameSecret(sentCsrf ?? "", sessionCsrf);
  return mayDeleteFromDashboard(who, csrfValid, deployment);
}

/**
 * The session rule ({@link checkSessionRequest}) for an operator-API request a dashboard session
 * speaks for: the session's CSRF token against the `X-Platform-CSRF` header it sent (compared in
 * constant time), and whether the request came from the control plane's own pages.
 */
export function authoriseSessionRequest(sessionCsrf: string, sentCsrf: string, sameOrigin: boolean): void {
  checkSessionRequest(sentCsrf.length > 0 && sameSecret(sentCsrf, sessionCsrf), sameOrigin);
}
