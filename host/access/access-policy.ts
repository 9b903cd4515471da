import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * Every access rule of the product, as pure functions over plain facts: who calls (an app user's
 * identity, or an operator-API caller), the deployment's state, and whether the host runs hosted or
 * `platform dev`. A rule either returns (allowed) or throws the `PlatformError` the caller sees;
 * codes and messages are part of the public contract. Rules that need a secret verified first have
 * a thin adapter in `credentials.ts`.
 */

/**
 * What the rules read of a deployment. A `DeploymentRecord` is one as it is, so a check on the
 * call path allocates nothing.
 */
export interface DeploymentAccess {
  readonly id: string;
  /** The owning developer; null while unclaimed. */
  readonly owner: string | null;
  readonly restricted: boolean;
  /** Approved account emails (lower case). */
  readonly approved: readonly string[];
  readonly declaration: { readonly auth: { readonly requireSignIn: boolean } };
}

/** Who calls the operator API: the host's operator, or a developer (by id). */
export type OperatorCaller =
  | { readonly kind: "admin" }
  | { readonly kind: "developer"; readonly developer: { readonly id: string } };

/** Who deletes a stored object: the deployment's owner (owner routes), or an app user. */
export type ObjectDeleter =
  | { readonly kind: "owner" }
  | { readonly kind: "uploader"; readonly userId: string };

/** The owner routes' deleter: any object of the deployment, whoever uploaded it. */
export const OWNER_DELETE: ObjectDeleter = { kind: "owner" };

/**
 * A restricted deployment admits only approved accounts (no identity: 401; a guest or another
 * account: 403). Applies to every surface of the app.
 */
export function checkRestricted(deployment: DeploymentAccess, identity: BridgeIdentity | null): void {
  if (!deployment.restricted) return;
  if (!identity)
    throw new PlatformError("unauthorized", "This app is restricted: sign in with an approved account.");
  if (identity.kind !== "account" || !identity.email || !deployment.approved.includes(identity.email)) {
    throw new PlatformError("forbidden", "This app is restricted to approved accounts.");
  }
}

/**
 * Queries and mutations (HTTP and sync): the restricted rule, then `requireSignIn` (no identity:
 * 401; a guest: 403). The same hosted and in `platform dev`.
 */
export function checkAppCall(deployment: DeploymentAccess, identity: BridgeIdentity | null): void {
  checkRestricted(deployment, identity);
  if (!deployment.declaration.auth.requireSignIn) return;
  if (!identity)
    throw new PlatformError("unauthorized", "This app requires sign-in: send Authorization: Bearer <token>.");
  if (identity.kind !== "account")
    throw new PlatformError("forbidden", "This app requires a signed-in account; guests cannot use it.");
}

/**
 * Custom endpoints: only the restricted rule. `requireSignIn` does not apply, because endpoints
 * authenticate their own callers (webhooks, shared secrets).
 */
export function checkEndpointCall(deployment: DeploymentAccess, identity: BridgeIdentity | null): void {
  checkRestricted(deployment, identity);
}

/** A legacy query may not write (legacy handlers hand their writes back instead of doing them). */
export function checkLegacyQueryWrites(writes: number): void {
  if (writes > 0) throw new PlatformError("forbidden", "This handler is read-only: queries cannot write.");
}

/**
 * Storage uploads and deletes: always an identity; hosted also a claimed deployment and a signed-in
 * account with a verified email (guests cannot upload), and the restricted rule. In `platform dev`
 * any identity may. Returns the identity that writes.
 */
export function checkStorageWriter(
  deployment: DeploymentAccess,
  identity: BridgeIdentity | null,
  dev: boolean,
): BridgeIdentity {
  if (!identity)
    throw new PlatformError(
      "unauthorized",
      "Sign in to upload or delete files (Authorization: Bearer <token> or ?platform_token=).",
    );
  if (dev) return identity;
  if (deployment.owner === null)
    throw new PlatformError(
      "forbidden",
      "This deployment is unclaimed: uploads and deletes need a claimed deployment.",
    );
  if (identity.kind !== "account" || !identity.email)
    throw new PlatformError(
      "forbidden",
      "Uploads and deletes need a signed-in account with a verified email; guests cannot upload.",
    );
  checkRestricted(deployment, identity);
  return identity;
}

/**
 * Storage reads: a public object is open on an unrestricted app without `requireSignIn` (served
 * with a public cache lifetime); anything else needs an identity, hosted an account, and passes the
 * restricted rule (served private). Returns how the download may be cached.
 */
export function checkStorageReader(
  deployment: DeploymentAccess,
  identity: BridgeIdentity | null,
  visibility: "public" | "private",
  dev: boolean,
): "public" | "private" {
  const open = !deployment.restricted && !deployment.declaration.auth.requireSignIn;
  if (visibility === "public" && open) return "public";
  if (!identity)
    throw new PlatformError(
      "unauthorized",
      "Sign in to read this file (Authorization: Bearer <token> or ?platform_token=).",
    );
  if (!dev && identity.kind !== "account")
    throw new PlatformError("forbidden", "Reading this file needs a signed-in account.");
  checkRestricted(deployment, identity);
  return "private";
}

/**
 * Which stored objects a deleter may remove: the owner any, an app user only what they uploaded.
 * Every storage delete (app route, owner route, dashboard) is decided here.
 */
export function checkObjectDelete(deleter: ObjectDeleter, object: { readonly uploaderId: string }): void {
  if (deleter.kind === "uploader" && object.uploaderId !== deleter.userId)
    throw new PlatformError(
      "forbidden",
      "Only the uploader (or the deployment's owner, via the owner route) can delete this file.",
    );
}

/** How an inspect-route caller proved itself, once its token was checked (`none`: it proved nothing). */
export type ListingCredential = "operator" | "claim token" | "owner" | "none";

/**
 * The storage listing (inspect route) always needs credentials, as it shows uploader emails: the
 * claim token, the owner's developer token or the operator's token. In `platform dev` it is local
 * and open. `presented`: a non-empty token came with the request.
 */
export function checkStorageListing(dev: boolean, presented: boolean, credential: ListingCredential): void {
  if (dev || credential !== "none") return;
  throw new PlatformError(
    presented ? "forbidden" : "unauthorized",
    "The storage listing needs the claim token, the owner's developer token or the operator's token.",
  );
}

/** Operator-only actions (creating developers). */
export function checkOperator(who: OperatorCaller): void {
  if (who.kind !== "admin") throw new PlatformError("forbidden", "Only the host's operator can do this.");
}

/**
 * A backup of the whole host (every deployment's data, every session, the host's signing keys):
 * the operator only, whoever owns what.
 */
export function checkHostBackup(who: OperatorCaller): void {
  if (who.kind !== "admin")
    throw new PlatformError(
      "forbidden",
      "Only the host's operator can back up the host (a backup holds every deployment's data).",
    );
}

/** The operator may manage any deployment; a developer only the ones they own. */
export function mayManage(who: OperatorCaller, deployment: { readonly owner: string | null }): boolean {
  return who.kind === "admin" || deployment.owner === who.developer.id;
}

/** {@link mayManage}, refusing with `forbidden` (owner routes: settings, logs, sessions, deletes). */
export function checkManage(
  who: OperatorCaller,
  deployment: { readonly id: string; readonly owner: string | null },
): void {
  if (mayManage(who, deployment)) return;
  if (deployment.owner === null)
    throw new PlatformError(
      "forbidden",
      `Deployment ${deployment.id} is unclaimed: claim it first with the claim token its deploy printed (POST /v1/deploys/${deployment.id}/claim with {"claimToken": ...}), or ask the host's operator.`,
    );
  throw new PlatformError("forbidden", `Deployment ${deployment.id} belongs to another developer.`);
}

/**
 * Whether `who` may insert, edit and delete a deployment's rows from the dashboard: its owner; the
 * operator only while it is unclaimed (it has no owner to do it). Reading rows is {@link mayManage}.
 */
export function mayWriteData(who: OperatorCaller, deployment: { readonly owner: string | null }): boolean {
  return who.kind === "admin" ? deployment.owner === null : deployment.owner === who.developer.id;
}

/** {@link mayWriteData}, refusing with `forbidden` (the data routes' inserts, edits and deletes). */
export function checkDataWrite(who: OperatorCaller, deployment: OwnedDeployment): void {
  checkOwnerOnly(
    who,
    deployment,
    `Rows of ${deployment.id} are changed by its owner only; the operator can read them.`,
  );
}

/**
 * Running a deployment's query or mutation as one of its identities from the dashboard: the
 * {@link mayWriteData} rule, since a mutation run this way writes the app's data as that identity.
 */
export function checkFunctionRun(who: OperatorCaller, deployment: OwnedDeployment): void {
  checkOwnerOnly(
    who,
    deployment,
    `Functions of ${deployment.id} are run from the dashboard by its owner only; the operator can read its logs.`,
  );
}

type OwnedDeployment = { readonly id: string; readonly owner: string | null };

/** {@link checkManage}, then the {@link mayWriteData} rule, refusing with `forbidden` and `refusal`. */
function checkOwnerOnly(who: OperatorCaller, deployment: OwnedDeployment, refusal: string): void {
  checkManage(who, deployment);
  if (!mayWriteData(who, deployment)) throw new PlatformError("forbidden", refusal);
}

/**
 * A request to the operator API that a dashboard session (a cookie) speaks for, rather than a
 * bearer token: it must carry the session's CSRF token in `X-Platform-CSRF` and come from a page
 * of the control plane itself. A sibling deployment is same-site, so its pages would send the
 * SameSite=Strict cookie too; neither it nor another site can read the CSRF token or set the header.
 */
export function checkSessionRequest(csrfValid: boolean, sameOrigin: boolean): void {
  if (!csrfValid || !sameOrigin)
    throw new PlatformError(
      "forbidden",
      "A dashboard session's request needs its X-Platform-CSRF header and must come from the dashboard's own pages.",
    );
}

/**
 * Export and import of a deployment's whole data (every row and stored file): its owner or the
 * operator, as for every owner route. An import into an id that names no deployment creates one,
 * owned as a deploy would own it; returns that owner (undefined: unclaimed, or none created).
 */
export function checkDataTransfer(
  who: OperatorCaller,
  deployment: { readonly id: string; readonly owner: string | null } | undefined,
): string | undefined {
  if (deployment) {
    checkManage(who, deployment);
    return undefined;
  }
  return ownerOfNewDeployment(who, undefined);
}

/**
 * Who owns a deployment a caller creates: a developer always owns what they create; the operator
 * may name an owner or leave it unclaimed (undefined).
 */
export function ownerOfNewDeployment(who: OperatorCaller, requested: string | undefined): string | undefined {
  return who.kind === "developer" ? who.developer.id : requested;
}

/** Only a developer can claim a deployment (the operator has nothing to claim it for). */
export function checkClaimant<W extends OperatorCaller>(
  who: W,
): asserts who is Extract<W, { kind: "developer" }> {
  if (who.kind !== "developer")
    throw new PlatformError("forbidden", "Claim a deployment with a developer token.");
}

/** A deployment is claimed once, and only with its claim token. */
export function checkClaim(
  deployment: { readonly id: string; readonly owner: string | null },
  tokenMatches: boolean,
): void {
  if (deployment.owner !== null)
    throw new PlatformError("conflict", `Deployment ${deployment.id} is already claimed.`);
  if (!tokenMatches)
    throw new PlatformError("forbidden", "That claim token is not valid for this deployment.");
}

/**
 * Whether `developerId` owns the deployment: the dashboard shows a deployment only to its owner
 * (others get a 404 page), and `/v1/me` lists the ones a developer owns.
 */
export function ownsDeployment<D extends { readonly owner: string | null }>(
  developerId: string,
  deployment: D | undefined,
): deployment is D {
  return deployment !== undefined && deployment.owner === developerId;
}

/**
 * A dashboard delete needs someone signed in who may manage the deployment (its owner, or the
 * operator, who manages all) and the session's CSRF token (else a 403 page).
 */
export function mayDeleteFromDashboard<D extends { readonly owner: string | null }>(
  who: OperatorCaller | undefined,
  csrfValid: boolean,
  deployment: D | undefined,
): deployment is D {
  return who !== undefined && csrfValid && deployment !== undefined && mayManage(who, deployment);
}

/**
 * `platform dev` signs the dashboard in automatically (as the operator of its one deployment), but
 * only for a request that both names a loopback host and comes from a loopback address: a page that
 * points its own DNS name at 127.0.0.1 sends that name as Host and is refused, and a page of
 * another site gets no session it could use (the cookie is SameSite=Strict and every request it
 * would make needs the session's CSRF token, which it cannot read). A request another site's page
 * made (`fromAnotherSite`: its `Sec-Fetch-Site`) gets none at all: an `<img>` pointed at the
 * dashboard would otherwise store a new session with each load.
 */
export function mayAutoSignIn(
  dev: boolean,
  loopbackHost: boolean,
  loopbackPeer: boolean,
  fromAnotherSite = false,
): boolean {
  return dev && loopbackHost && loopbackPeer && !fromAnotherSite;
}
