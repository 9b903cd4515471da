import { describe, expect, it } from "vitest";
import type { BridgeIdentity } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { hashSecret } from "../auth/index.js";
import { isLoopbackAddress, isLoopbackHost } from "../http/loopback-host.js";
import {
  checkAppCall,
  checkEndpointCall,
  checkLegacyQueryWrites,
  checkObjectDelete,
  checkRestricted,
  checkSignIn,
  checkStorageListing,
  checkStorageReader,
  checkStorageWriter,
  type DeploymentAccess,
  type ListingCredential,
  OWNER_DELETE,
} from "./app-access.js";
import { authoriseClaim, authoriseSessionRequest, dashboardDeleteAllowed } from "./credentials.js";
import {
  checkClaim,
  checkClaimant,
  checkDataWrite,
  checkHostBackup,
  checkManage,
  checkOperator,
  checkSessionRequest,
  mayAutoSignIn,
  mayDeleteFromDashboard,
  mayManage,
  mayWriteData,
  type OperatorCaller,
  ownerOfNewDeployment,
  ownsDeployment,
} from "./operator-access.js";

/** `ok`, or the error's `code: message` (the whole public contract of a refusal). */
function outcome(check: () => unknown): string {
  try {
    check();
    return "ok";
  } catch (error) {
    if (!isPlatformError(error)) throw error;
    return `${error.code}: ${error.message}`;
  }
}

function deployment(
  state: Partial<Omit<DeploymentAccess, "declaration">> & { requireSignIn?: boolean } = {},
) {
  return {
    id: "app",
    owner: state.owner === undefined ? "dev_owner" : state.owner,
    restricted: state.restricted ?? false,
    approved: state.approved ?? ["approved@example.com"],
    declaration: { auth: { requireSignIn: state.requireSignIn ?? false } },
  } satisfies DeploymentAccess;
}

const STATES = {
  unrestricted: deployment(),
  requireSignIn: deployment({ requireSignIn: true }),
  restricted: deployment({ restricted: true }),
  unclaimed: deployment({ owner: null }),
};

const WHO: Record<string, BridgeIdentity | null> = {
  "no identity": null,
  guest: { userId: "g", kind: "guest" },
  "account without email": { userId: "a0", kind: "account" },
  account: { userId: "a1", kind: "account", email: "someone@example.com" },
  "approved account": { userId: "a2", kind: "account", email: "approved@example.com" },
};

const RESTRICTED_401 = "unauthorized: This app is restricted: sign in with an approved account.";
const RESTRICTED_403 = "forbidden: This app is restricted to approved accounts.";
const SIGN_IN_401 = "unauthorized: This app requires sign-in: send Authorization: Bearer <token>.";
const SIGN_IN_403 = "forbidden: This app requires a signed-in account; guests cannot use it.";

/** Expected outcome per identity, in the order of {@link WHO}. */
type Row = [string, string, string, string, string];

/** How a restricted deployment answers each identity: only the approved account passes. */
const RESTRICTED_ROW: Row = [RESTRICTED_401, RESTRICTED_403, RESTRICTED_403, RESTRICTED_403, "ok"];
const OPEN_ROW: Row = ["ok", "ok", "ok", "ok", "ok"];

function table(check: (identity: BridgeIdentity | null) => unknown): Row {
  return Object.values(WHO).map((identity) => outcome(() => check(identity))) as Row;
}

describe("queries and mutations", () => {
  const expected: Record<keyof typeof STATES, Row> = {
    unrestricted: OPEN_ROW,
    requireSignIn: [SIGN_IN_401, SIGN_IN_403, "ok", "ok", "ok"],
    restricted: RESTRICTED_ROW,
    unclaimed: OPEN_ROW,
  };
  for (const [state, record] of Object.entries(STATES)) {
    it(`on a ${state} deployment`, () => {
      expect(table((who) => checkAppCall(record, who))).toEqual(expected[state as keyof typeof STATES]);
    });
  }
  it("checks restriction before requireSignIn", () => {
    const both = deployment({ restricted: true, requireSignIn: true });
    expect(table((who) => checkAppCall(both, who))).toEqual(RESTRICTED_ROW);
  });
});

describe("custom endpoints", () => {
  it("apply only the restricted rule (requireSignIn is the endpoint's business)", () => {
    expect(table((who) => checkEndpointCall(STATES.requireSignIn, who))).toEqual(OPEN_ROW);
    expect(table((who) => checkEndpointCall(STATES.restricted, who))).toEqual(
      table((who) => checkRestricted(STATES.restricted, who)),
    );
    expect(table((who) => checkEndpointCall(STATES.restricted, who))).toEqual(RESTRICTED_ROW);
  });
});

describe("sign-in", () => {
  const NO_GUESTS =
    "forbidden: This app is restricted to approved accounts: it gives no guest tokens; sign in with an approved account.";
  /** A sign-in of each identity but the absent one (a sign-in is someone). */
  const signIns = (record: DeploymentAccess) =>
    table((who) => (who ? checkSignIn(record, who) : undefined)).slice(1);

  it("is open unless the deployment is restricted (requireSignIn still hands out guests)", () => {
    for (const state of ["unrestricted", "requireSignIn", "unclaimed"] as const)
      expect(signIns(STATES[state])).toEqual(OPEN_ROW.slice(1));
  });

  it("on a restricted deployment: no guests, and approved accounts only, refused as their calls are", () => {
    expect(outcome(() => checkSignIn(STATES.restricted, { kind: "guest" }))).toBe(NO_GUESTS);
    expect(signIns(STATES.restricted)).toEqual([NO_GUESTS, RESTRICTED_403, RESTRICTED_403, "ok"]);
  });
});

describe("legacy queries", () => {
  it("may not write; legacy mutations are not checked here", () => {
    expect(outcome(() => checkLegacyQueryWrites(0))).toBe("ok");
    expect(outcome(() => checkLegacyQueryWrites(2))).toBe(
      "forbidden: This handler is read-only: queries cannot write.",
    );
  });
});

describe("storage uploads and deletes", () => {
  const SIGN_IN =
    "unauthorized: Sign in to upload or delete files (Authorization: Bearer <token> or ?platform_token=).";
  const UNCLAIMED = "forbidden: This deployment is unclaimed: uploads and deletes need a claimed deployment.";
  const GUEST =
    "forbidden: Uploads and deletes need a signed-in account with a verified email; guests cannot upload.";
  it("hosted: a claimed deployment and a verified account, within the restricted rule", () => {
    expect(table((who) => checkStorageWriter(STATES.unrestricted, who, false))).toEqual([
      SIGN_IN,
      GUEST,
      GUEST,
      "ok",
      "ok",
    ]);
    expect(table((who) => checkStorageWriter(STATES.requireSignIn, who, false))).toEqual([
      SIGN_IN,
      GUEST,
      GUEST,
      "ok",
      "ok",
    ]);
    expect(table((who) => checkStorageWriter(STATES.restricted, who, false))).toEqual([
      SIGN_IN,
      GUEST,
      GUEST,
      RESTRICTED_403,
      "ok",
    ]);
    expect(table((who) => checkStorageWriter(STATES.unclaimed, who, false))).toEqual([
      SIGN_IN,
      UNCLAIMED,
      UNCLAIMED,
      UNCLAIMED,
      UNCLAIMED,
    ]);
  });
  it("platform dev: any identity", () => {
    for (const record of Object.values(STATES))
      expect(table((who) => checkStorageWriter(record, who, true))).toEqual([
        SIGN_IN,
        "ok",
        "ok",
        "ok",
        "ok",
      ]);
  });
  it("returns the identity that writes", () => {
    const who = WHO.account as BridgeIdentity;
    expect(checkStorageWriter(STATES.unrestricted, who, false)).toBe(who);
  });
});

describe("storage reads", () => {
  const SIGN_IN =
    "unauthorized: Sign in to read this file (Authorization: Bearer <token> or ?platform_token=).";
  const ACCOUNT = "forbidden: Reading this file needs a signed-in account.";
  const read = (record: DeploymentAccess, visibility: "public" | "private", dev: boolean) =>
    Object.values(WHO).map((who) => {
      try {
        return checkStorageReader(record, who, visibility, dev);
      } catch (error) {
        return outcome(() => {
          throw error;
        });
      }
    });
  it("public objects are open (and publicly cacheable) only on unrestricted apps without requireSignIn", () => {
    for (const dev of [false, true]) {
      expect(read(STATES.unrestricted, "public", dev)).toEqual([
        "public",
        "public",
        "public",
        "public",
        "public",
      ]);
      expect(read(STATES.unclaimed, "public", dev)).toEqual([
        "public",
        "public",
        "public",
        "public",
        "public",
      ]);
    }
    expect(read(STATES.requireSignIn, "public", false)).toEqual([
      SIGN_IN,
      ACCOUNT,
      "private",
      "private",
      "private",
    ]);
    expect(read(STATES.restricted, "public", false)).toEqual([
      SIGN_IN,
      ACCOUNT,
      RESTRICTED_403,
      RESTRICTED_403,
      "private",
    ]);
  });
  it("private objects need an account hosted, any identity in platform dev, and the restricted rule", () => {
    expect(read(STATES.unrestricted, "private", false)).toEqual([
      SIGN_IN,
      ACCOUNT,
      "private",
      "private",
      "private",
    ]);
    expect(read(STATES.unrestricted, "private", true)).toEqual([
      SIGN_IN,
      "private",
      "private",
      "private",
      "private",
    ]);
    expect(read(STATES.restricted, "private", true)).toEqual([
      SIGN_IN,
      RESTRICTED_403,
      RESTRICTED_403,
      RESTRICTED_403,
      "private",
    ]);
  });
});

describe("storage object deletes", () => {
  const object = { uploaderId: "a1" };
  it("the owner deletes any object, an app user only their own", () => {
    expect(outcome(() => checkObjectDelete(OWNER_DELETE, object))).toBe("ok");
    expect(outcome(() => checkObjectDelete({ kind: "uploader", userId: "a1" }, object))).toBe("ok");
    expect(outcome(() => checkObjectDelete({ kind: "uploader", userId: "a2" }, object))).toBe(
      "forbidden: Only the uploader (or the deployment's owner, via the owner route) can delete this file.",
    );
  });
});

describe("the storage listing (inspect route)", () => {
  const REFUSED =
    "The storage listing needs the claim token, the owner's developer token or the operator's token.";
  const credentials: ListingCredential[] = ["operator", "claim token", "owner"];
  it("admits the operator, the claim token and the owner's developer token", () => {
    for (const credential of credentials)
      expect(outcome(() => checkStorageListing(false, true, credential))).toBe("ok");
  });
  it("refuses anything else: 401 without a token, 403 with a wrong one", () => {
    expect(outcome(() => checkStorageListing(false, false, "none"))).toBe(`unauthorized: ${REFUSED}`);
    expect(outcome(() => checkStorageListing(false, true, "none"))).toBe(`forbidden: ${REFUSED}`);
  });
  it("is open in platform dev", () => {
    expect(outcome(() => checkStorageListing(true, false, "none"))).toBe("ok");
  });
});

describe("owner routes (operator API)", () => {
  const admin: OperatorCaller = { kind: "admin" };
  const owner: OperatorCaller = { kind: "developer", developer: { id: "dev_owner" } };
  const other: OperatorCaller = { kind: "developer", developer: { id: "dev_other" } };
  it("operator-only actions refuse developers", () => {
    expect(outcome(() => checkOperator(admin))).toBe("ok");
    expect(outcome(() => checkOperator(owner))).toBe("forbidden: Only the host's operator can do this.");
  });
  it("only the operator backs up the host, even a developer who owns every deployment", () => {
    expect(outcome(() => checkHostBackup(admin))).toBe("ok");
    expect(outcome(() => checkHostBackup(owner))).toBe(
      "forbidden: Only the host's operator can back up the host (a backup holds every deployment's data).",
    );
  });
  it("the operator manages any deployment, a developer only their own", () => {
    for (const record of Object.values(STATES)) expect(mayManage(admin, record)).toBe(true);
    expect(mayManage(owner, STATES.unrestricted)).toBe(true);
    expect(mayManage(owner, STATES.unclaimed)).toBe(false);
    expect(outcome(() => checkManage(other, STATES.unrestricted))).toBe(
      "forbidden: Deployment app belongs to another developer.",
    );
    expect(outcome(() => checkManage(owner, STATES.unrestricted))).toBe("ok");
    // An unclaimed one belongs to nobody yet: the refusal says how to take it over.
    expect(outcome(() => checkManage(owner, STATES.unclaimed))).toBe(
      'forbidden: Deployment app is unclaimed: claim it first with the claim token its deploy printed (POST /v1/deploys/app/claim with {"claimToken": ...}), or ask the host\'s operator.',
    );
  });
  it("a developer owns what they create; the operator names an owner or none", () => {
    expect(ownerOfNewDeployment(owner, "dev_other")).toBe("dev_owner");
    expect(ownerOfNewDeployment(admin, "dev_other")).toBe("dev_other");
    expect(ownerOfNewDeployment(admin, undefined)).toBeUndefined();
  });
});

describe("claims", () => {
  const token = "pct_secret";
  const unclaimed = { id: "app", owner: null, claimTokenHash: hashSecret(token) };
  it("only a developer claims", () => {
    expect(outcome(() => checkClaimant({ kind: "admin" }))).toBe(
      "forbidden: Claim a deployment with a developer token.",
    );
    expect(outcome(() => checkClaimant({ kind: "developer", developer: { id: "d" } }))).toBe("ok");
  });
  it("once, and only with the claim token", () => {
    expect(outcome(() => checkClaim({ id: "app", owner: "d" }, true))).toBe(
      "conflict: Deployment app is already claimed.",
    );
    expect(outcome(() => checkClaim(unclaimed, false))).toBe(
      "forbidden: That claim token is not valid for this deployment.",
    );
    expect(outcome(() => checkClaim(unclaimed, true))).toBe("ok");
  });
  it("verifies the token sent (any JSON value) against the stored hash", () => {
    expect(outcome(() => authoriseClaim(unclaimed, token))).toBe("ok");
    for (const wrong of ["pct_other", 42, undefined, null])
      expect(outcome(() => authoriseClaim(unclaimed, wrong))).toBe(
        "forbidden: That claim token is not valid for this deployment.",
      );
    expect(outcome(() => authoriseClaim({ id: "app", owner: null }, token))).toBe(
      "forbidden: That claim token is not valid for this deployment.",
    );
    expect(outcome(() => authoriseClaim({ id: "app", owner: "d", claimTokenHash: "x" }, token))).toBe(
      "conflict: Deployment app is already claimed.",
    );
  });
});

describe("the dashboard", () => {
  const record = { owner: "dev_owner" };
  it("shows a deployment only to its owner", () => {
    expect(ownsDeployment("dev_owner", record)).toBe(true);
    expect(ownsDeployment("dev_other", record)).toBe(false);
    expect(ownsDeployment("dev_owner", undefined)).toBe(false);
    expect(ownsDeployment("dev_owner", { owner: null })).toBe(false);
  });
  it("deletes for a signed-in owner or the operator with the session's CSRF token", () => {
    const owner: OperatorCaller = { kind: "developer", developer: { id: "dev_owner" } };
    const other: OperatorCaller = { kind: "developer", developer: { id: "dev_other" } };
    const admin: OperatorCaller = { kind: "admin" };
    expect(mayDeleteFromDashboard(owner, true, record)).toBe(true);
    expect(mayDeleteFromDashboard(admin, true, record)).toBe(true);
    expect(mayDeleteFromDashboard(admin, true, { owner: null })).toBe(true);
    expect(mayDeleteFromDashboard(undefined, true, record)).toBe(false);
    expect(mayDeleteFromDashboard(owner, false, record)).toBe(false);
    expect(mayDeleteFromDashboard(admin, false, record)).toBe(false);
    expect(mayDeleteFromDashboard(admin, true, undefined)).toBe(false);
    expect(mayDeleteFromDashboard(other, true, record)).toBe(false);
    expect(dashboardDeleteAllowed(owner, "csrf", "csrf", record)).toBe(true);
    expect(dashboardDeleteAllowed(admin, "csrf", "csrf", record)).toBe(true);
    expect(dashboardDeleteAllowed(owner, "csrf", "other", record)).toBe(false);
    expect(dashboardDeleteAllowed(admin, "csrf", null, record)).toBe(false);
    expect(dashboardDeleteAllowed(undefined, undefined, "csrf", record)).toBe(false);
  });
  it("lets the owner change rows; the operator only an unclaimed deployment's; reads for whoever manages", () => {
    const owner: OperatorCaller = { kind: "developer", developer: { id: "dev_owner" } };
    const other: OperatorCaller = { kind: "developer", developer: { id: "dev_other" } };
    const admin: OperatorCaller = { kind: "admin" };
    const claimed = { id: "chat", owner: "dev_owner" };
    const unclaimed = { id: "orphan", owner: null };
    expect(mayWriteData(owner, claimed)).toBe(true);
    expect(mayWriteData(admin, claimed)).toBe(false);
    expect(mayWriteData(admin, unclaimed)).toBe(true);
    expect(mayWriteData(other, claimed)).toBe(false);
    expect(mayWriteData(owner, unclaimed)).toBe(false);
    expect(outcome(() => checkDataWrite(owner, claimed))).toBe("ok");
    expect(outcome(() => checkDataWrite(admin, unclaimed))).toBe("ok");
    expect(outcome(() => checkDataWrite(admin, claimed))).toBe(
      "forbidden: Rows of chat are changed by its owner only; the operator can read them.",
    );
    expect(outcome(() => checkDataWrite(other, claimed))).toBe(
      "forbidden: Deployment chat belongs to another developer.",
    );
  });
  it("lets a session speak on /v1 only with its CSRF token, from the control plane's pages", () => {
    const refused =
      "forbidden: A dashboard session's request needs its X-Platform-CSRF header and must come from the dashboard's own pages.";
    expect(outcome(() => checkSessionRequest(true, true))).toBe("ok");
    expect(outcome(() => checkSessionRequest(false, true))).toBe(refused);
    expect(outcome(() => checkSessionRequest(true, false))).toBe(refused);
    expect(outcome(() => authoriseSessionRequest("csrf", "csrf", true))).toBe("ok");
    expect(outcome(() => authoriseSessionRequest("csrf", "", true))).toBe(refused);
    expect(outcome(() => authoriseSessionRequest("csrf", "csrf2", true))).toBe(refused);
    expect(outcome(() => authoriseSessionRequest("csrf", "csrf", false))).toBe(refused);
  });
});

describe("platform dev's dashboard", () => {
  it("signs in by itself only in dev, for a loopback Host from a loopback peer", () => {
    expect(mayAutoSignIn(true, true, true)).toBe(true);
    expect(mayAutoSignIn(false, true, true)).toBe(false);
    expect(mayAutoSignIn(true, false, true)).toBe(false);
    expect(mayAutoSignIn(true, true, false)).toBe(false);
    expect(mayAutoSignIn(true, true, true, true)).toBe(false);
    expect(isLoopbackHost("dashboard.localhost:3000")).toBe(true);
    expect(isLoopbackHost("evil.example:3000")).toBe(false);
    for (const address of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"])
      expect(isLoopbackAddress(address)).toBe(true);
    for (const address of ["10.0.0.1", "::ffff:192.168.1.2", "fe80::1", "", undefined])
      expect(isLoopbackAddress(address)).toBe(false);
  });
});
