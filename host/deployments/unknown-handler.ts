import type { CapsuleDeclaration } from "../../sdk/protocol/index.js";
import { nearestName, PlatformError } from "../../sdk/values/index.js";

/** Declared names of a kind past which a miss gets no "did you mean". */
const HINT_CANDIDATES = 100;

/**
 * The `not_found` error for a call of a query or mutation the deployment does not declare, saying
 * what the caller most likely meant, since that is what they need to fix it: a name of the other
 * kind (`add` is a mutation: it is called at `/api/mutation/add`), else the nearest declared name
 * of the same kind, else the nearest of the other kind, else nothing more. The code stays `not_found` (404) either way, so callers
 * that recognise it by code see no change.
 */
export function unknownHandlerError(
  declaration: Pick<CapsuleDeclaration, "queries" | "mutations">,
  deploymentId: string,
  kind: "query" | "mutation",
  name: string,
): PlatformError {
  const other = kind === "query" ? "mutation" : "query";
  const missing = `No ${kind} named ${JSON.stringify(name)} in deployment ${deploymentId}`;
  const otherNames = kind === "query" ? declaration.mutations : declaration.queries;
  if (otherNames.includes(name))
    return new PlatformError(
      "not_found",
      `${missing}: ${JSON.stringify(name)} is a ${other} (call it at /api/${other}/${name}).`,
    );
  const declared = kind === "query" ? declaration.queries : declaration.mutations;
  // Looked for among a few hundred names at most: every miss pays for the search.
  const nearest = declared.length <= HINT_CANDIDATES ? nearestName(name, declared) : undefined;
  if (nearest !== undefined)
    return new PlatformError("not_found", `${missing}. Did you mean ${JSON.stringify(nearest)}?`);
  const nearestOther = otherNames.length <= HINT_CANDIDATES ? nearestName(name, otherNames) : undefined;
  return new PlatformError(
    "not_found",
    nearestOther === undefined
      ? `${missing}.`
      : `${missing}. Did you mean the ${other} ${JSON.stringify(nearestOther)} (at /api/${other}/${nearestOther})?`,
  );
}
