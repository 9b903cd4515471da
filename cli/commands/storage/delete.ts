import type { Command } from "commander";
import { PlatformError } from "../../../sdk/values/index.js";
import { ownerToken } from "../../config.js";
import { parseObjectKey, pathOf } from "../../flags.js";
import type { HttpResponse } from "../../http.js";
import { printResult, runAction } from "../../output.js";
import {
  hostedAppOptions,
  localGuestToken,
  resolveTarget,
  send,
  storageFailure,
  type TargetFlags,
  targetOptions,
} from "./target.js";

interface DeleteFlags extends TargetFlags {
  deploy?: string;
  token?: string;
}

/**
 * `platform storage delete <key>`: deletes one file, as the local guest on the dev server, or
 * through the owner route (any uploader's file) on a hosted app.
 */
export function registerStorageDelete(storage: Command): void {
  hostedAppOptions(
    targetOptions(
      storage.command("delete").argument("<key>", "public/<id> or private/<id>", parseObjectKey),
    ).description("delete one file (hosted: the owner's credentials, any uploader's file)"),
    "owner token for a hosted app (default: $PLATFORM_TOKEN, then your login)",
  )
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage delete public/AbC...\n  platform storage delete private/AbC... --deploy todo --host http://localhost:8080",
    )
    .action((key: string, flags: DeleteFlags) => runAction(() => remove(key, flags), flags.verbose));
}

async function remove(key: string, flags: DeleteFlags): Promise<void> {
  const target = resolveTarget(flags.deploy, flags);
  let response: HttpResponse;
  if (target.hosted) {
    const token = ownerToken(target.controlPlane ?? target.base, flags.token);
    if (!token)
      throw new PlatformError(
        "unauthorized",
        "Hosted deletes need the owner's credentials: platform login, PLATFORM_TOKEN or --token.",
      );
    response = await send(
      `${target.controlPlane}/v1/me/deploys/${encodeURIComponent(target.deployId)}/storage/${pathOf(key)}`,
      { method: "DELETE", headers: { authorization: `Bearer ${token}` } },
      target,
    );
  } else {
    const token = await localGuestToken(target);
    response = await send(
      `${target.base}/storage/${pathOf(key)}`,
      { method: "DELETE", headers: { authorization: `Bearer ${token}` } },
      target,
    );
  }
  if (response.status !== 204) throw storageFailure(response, target, "delete");
  printResult(Boolean(flags.json), { key, deleted: true }, `deleted ${key}`);
}
