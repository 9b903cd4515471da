import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * The access rules of app users (host/access, with operator-access.ts for the operator API and
 * the dashboard): calls, endpoints and storage, as pure functions over plain facts (the caller's
 * identity, the deployment's state, and whether the host runs hosted or `platform dev`). A rule
 * either returns (allowed) or throws the `PlatformError` the caller sees; codes and messages are
 * part of the public contract. Rules that need a secret verified first have a thin adapter in
 * `credentials.ts`.
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
 * Who may sign in, decided before any session is stored or guest upgraded: anyone, unless the
 * deployment is restricted. Then it hands out no guest tokens (a guest may use nothing there), and
 * signs in approved accounts only, refused with the 403 their calls would get: an outsider's guest
 * upgraded into their own account ran the app's `onGuestUpgrade`, with its writes. Routes check an
 * account after its email was proved (code, ID token), so a refusal tells only the email's owner.
 */
export function checkSignIn(
  deployment: DeploymentAccess,
  identity: { readonly kind: "guest" } | BridgeIdentity,
): void {
  if (!deployment.restricted) return;
  if (identity.kind === "guest")
    throw new PlatformError(
      "forbidden",
      "This app is restricted to approved accounts: it gives no guest tokens; sign in with an approved account.",
    );
  checkRestricted(deployment, identity);
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
