import type { Command } from "commander";
import { LIMITS, printable } from "../../../sdk/protocol/index.js";
import { colorsFor } from "../../colors.js";
import { ownerToken } from "../../config.js";
import { formatBytes, plural, printResult, runAction } from "../../output.js";
import { formatTable } from "../../table.js";
import { resolveTarget, send, storageFailure, type TargetFlags, targetOptions } from "./target.js";

interface ListFlags extends TargetFlags {
  prefix?: string;
  inspectToken?: string;
}

interface Listing {
  objects: Array<{
    key: string;
    size: number;
    contentType: string;
    uploaderId: string;
    uploaderEmail: string | null;
  }>;
  totals: { count: number; bytes: number };
  newest: number;
  truncated: boolean;
}

/** `platform storage list [deploy_id]`: the newest files with their uploaders, then totals. */
export function registerStorageList(storage: Command): void {
  targetOptions(
    storage.command("list").argument("[deploy_id]", "a hosted deployment (id or URL); none: the dev server"),
  )
    .description(`list the newest ${LIMITS.listingSize} files: key, size, type, uploader, then totals`)
    .option(
      "--prefix <prefix>",
      `only keys starting with this (checked within the newest ${LIMITS.listingSize})`,
    )
    .option(
      "--inspect-token <token>",
      "claim or developer token for a hosted app (default: $PLATFORM_INSPECT_TOKEN, then your login)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage list\n  platform storage list todo --host http://localhost:8080 --prefix public/ --json",
    )
    .action((deploy: string | undefined, flags: ListFlags) =>
      runAction(() => list(deploy, flags), flags.verbose),
    );
}

async function list(deploy: string | undefined, flags: ListFlags): Promise<void> {
  const target = resolveTarget(deploy, flags);
  const token = target.hosted
    ? (flags.inspectToken ??
      process.env.PLATFORM_INSPECT_TOKEN ??
      ownerToken(target.controlPlane ?? target.base))
    : undefined;
  const response = await send(
    `${target.base}/__platform/storage`,
    { headers: token ? { authorization: `Bearer ${token}` } : {} },
    target,
  );
  if (response.status !== 200) throw storageFailure(response, target, "list");
  const listing = response.json<Listing>();
  const objects = flags.prefix
    ? listing.objects.filter((o) => o.key.startsWith(flags.prefix as string))
    : listing.objects;
  const olderNotChecked = Boolean(flags.prefix) && listing.truncated;
  const c = colorsFor(process.stdout);
  const lines =
    objects.length > 0
      ? [
          formatTable({
            head: ["KEY", "SIZE", "TYPE", "UPLOADER"].map((h) => c.dim(h)),
            // What a tenant set (a type, an uploader) never reaches the terminal as escape codes.
            rows: objects.map((o) => [
              printable(o.key),
              printable(formatBytes(o.size)),
              printable(o.contentType),
              printable(o.uploaderEmail ?? o.uploaderId),
            ]),
            align: ["left", "right", "left", "left"],
          }),
        ]
      : [];
  lines.push(
    printable(`${plural(listing.totals.count, "file")}, ${formatBytes(listing.totals.bytes)} in total`),
  );
  if (olderNotChecked)
    lines.push(
      printable(
        `Only the newest ${plural(listing.newest, "file was", "files were")} checked for --prefix ${flags.prefix}; older files were not.`,
      ),
    );
  printResult(
    Boolean(flags.json),
    {
      objects,
      totals: listing.totals,
      ...(flags.prefix ? { prefix: flags.prefix, olderNotChecked } : {}),
    },
    lines.join("\n"),
    // The heads are dimmed; every value in the lines was made printable above.
    true,
  );
}
