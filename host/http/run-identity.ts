import type { BridgeIdentity, RunAnswer } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { type AuthService, accountUserId, namedGuestUserId, normaliseEmail } from "../auth/index.js";

/** The guest a run acts as when no name is given. */
const DEFAULT_RUN_GUEST = "dashboard";

function bad(message: string): PlatformError {
  return new PlatformError("bad_request", message);
}

/** An identity a run acts as: what the handler sees, and how the answer and the log name it. */
export interface ResolvedIdentity {
  identity: BridgeIdentity | null;
  shown: RunAnswer["identity"];
  /** For the log line: `anonymous`, `guest guest:<name>`, `account <email>`. */
  label: string;
}

/**
 * The identity of deployment `deployment` that a run's `as` names. Every identity is built for
 * that deployment only: a guest is `guest:<name>` there, and an account's user id is derived from
 * the deployment and the email, which must already be an account of it (`not_found` otherwise),
 * so no run ever acts as anyone of another deployment.
 */
export async function runIdentity(
  auth: AuthService,
  deployment: string,
  as: unknown,
): Promise<ResolvedIdentity> {
  const spec = (typeof as === "object" && as !== null ? as : {}) as Record<string, unknown>;
  switch (spec.kind) {
    case "anonymous":
      return { identity: null, shown: { kind: "anonymous", userId: null }, label: "anonymous" };
    case "guest": {
      const name = spec.name === undefined || spec.name === "" ? DEFAULT_RUN_GUEST : spec.name;
      const userId = namedGuestUserId(name);
      return {
        identity: { userId, kind: "guest" },
        shown: { kind: "guest", userId },
        label: `guest ${userId}`,
      };
    }
    case "account": {
      const email = normaliseEmail(spec.email);
      if (!(await auth.accountExists(deployment, email)))
        throw new PlatformError(
          "not_found",
          `No account ${email} in deployment ${deployment}: an account exists once it has signed in to the app.`,
        );
      const userId = accountUserId(deployment, email);
      return {
        identity: { userId, kind: "account", email },
        shown: { kind: "account", userId, email },
        label: `account ${email}`,
      };
    }
    default:
      throw bad(
        'as is {"kind": "anonymous"}, {"kind": "guest", "name"?: "<name>"} or {"kind": "account", "email": "<email>"}.',
      );
  }
}
