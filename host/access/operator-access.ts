import { PlatformError } from "../../sdk/values/index.js";

/**
 * The access rules of the operator API and the dashboard (host/access, with app-access.ts for app
 * users): who may manage, write data of, transfer, claim and create deployments. Pure functions
 * over plain facts; a rule returns (allowed) or throws the `PlatformError` the caller sees.
 */

/** Who calls the operator API: the host's operator, or a developer (by id). */
export type OperatorCaller =
  | { readonly kind: "admin" }
  | { readonly kind: "developer"; readonly developer: { readonly id: string } };

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
 * Ids a developer may not create (the operator may): host names browsers, mail clients and mail
 * servers look up by themselves under a domain (proxy auto-discovery, mail settings and policy),
 * and names that would pass for the host's own pages or services. A deployment at
 * `autodiscover.<domain>` would receive mail clients' passwords, at `wpad.<domain>` set browsers'
 * proxies, at `mta-sts.<domain>` the domain's mail security policy.
 */
export const RESERVED_DEPLOYMENT_IDS: ReadonlySet<string> = new Set([
  "wpad",
  "isatap",
  "autodiscover",
  "autoconfig",
  "mta-sts",
  "openpgpkey",
  "enterpriseenrollment",
  "enterpriseregistration",
  "lyncdiscover",
  "sip",
  "mail",
  "smtp",
  "imap",
  "pop",
  "pop3",
  "mx",
  "webmail",
  "ns1",
  "ns2",
  "ftp",
  "www",
  "dashboard",
  "admin",
  "login",
  "signin",
  "auth",
  "account",
  "accounts",
  "api",
  "status",
  "static",
  "cdn",
  "docs",
  "help",
  "support",
  "localhost",
  "platform",
]);

/**
 * Whether `who` may create deployment `id`: a developer not one of the ids the host reserves
 * ({@link RESERVED_DEPLOYMENT_IDS}); the operator any.
 */
export function checkNewDeploymentId(who: OperatorCaller, id: string): void {
  if (who.kind === "developer" && RESERVED_DEPLOYMENT_IDS.has(id))
    throw new PlatformError(
      "forbidden",
      `The deployment id ${id} is reserved on this host: browsers and mail clients look up such names by themselves, or they would pass for the host's own. Choose another id.`,
    );
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
