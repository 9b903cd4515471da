import { type CapsuleDeclaration, LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkJsonShape } from "../json-shape.js";

/**
 * The declaration a capsule answered, parsed once its size and shape are known to be within what
 * a real one needs (`LIMITS.declarationChars`): the capsule is untrusted, and the host's main thread
 * parses it. Its content is checked after (host/deployments/declaration.ts).
 */
export function parseDeclaration(json: string): CapsuleDeclaration {
  if (json.length > LIMITS.declarationChars)
    throw new PlatformError(
      "bad_request",
      `The capsule's declaration is ${json.length} characters of JSON; at most ${LIMITS.declarationChars} are allowed (LIMITS.declarationChars). Declare fewer tables, fields or indexes: split the app into several deployments.`,
    );
  checkJsonShape(json, "The capsule's declaration", LIMITS.importSchemaMembers, LIMITS.importSchemaMembers);
  return JSON.parse(json) as CapsuleDeclaration;
}
