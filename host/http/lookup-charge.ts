import type { Middleware } from "koa";
import type { DeploymentService } from "../deployments/index.js";
import { clientAddressKey } from "./client-address.js";
import type { RequestQuota } from "./request-quota.js";

/**
 * Charges a request to a deployment this host holds no record of to its client's address, in a
 * bucket of its own for all deployments, before any route looks the deployment up: each such
 * lookup reads the database (on PostgreSQL a round trip on the pool every tenant's session checks
 * use), and a client naming a new id in each request had a fresh per-deployment bucket every time,
 * or no charge at all (an app's pages). A deployment this host serves costs nothing here.
 */
export function chargeLookups(
  deployments: Pick<DeploymentService, "holds">,
  quota: RequestQuota,
): Middleware {
  return (ctx, next) => {
    if (ctx.state.origin === "deployment" && !deployments.holds(ctx.state.deployment as string))
      quota.charge(lookupKey(quota.clientAddress(ctx.req)));
    return next();
  };
}

/** The bucket lookups of deployments a host does not hold are charged to (sync upgrades' too). */
export function lookupKey(clientAddress: string): string {
  return `lookup\u0000${clientAddressKey(clientAddress)}`;
}
