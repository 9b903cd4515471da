/**
 * Deployments and deploys: how many deployments a developer owns and deploys they start, and what one
 * deploy carries (its declaration, env values, bundle and web client).
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const DEPLOY_LIMITS = {
  /**
   * Deployments one developer may own: each holds a database of its own (up to
   * rowBytesPerDeployment), so without a bound one developer could fill the disk every tenant's
   * data is on. The operator creates more for a developer past it. Ours.
   */
  deploymentsPerDeveloper: 100,
  /**
   * Queries, mutations and endpoints one capsule may declare, together. Ours: a call looks its
   * handler up among them, and a miss looks for the nearest name; a declaration of 120,000 names
   * (within its 8 MiB) held the host's main thread 10 s on every call of a name it lacked.
   */
  functionsPerCapsule: 1000,
  /**
   * Characters of a capsule's declaration (schema, handler names, endpoints, auth), which every
   * deploy parses and the deployment's record keeps: about 1,400 tables of 30 fields and a few
   * indexes. Ours: an export's `deployment.json` repeats it beside the approved emails and env
   * names, which an import takes up to {@link LIMITS.importSchemaBytes}; 8 MiB of members were
   * parsed by every listing of deployments, 0.7 s each.
   */
  declarationChars: 2 * 1024 * 1024,
  /** Server-only env values of one deployment, and characters of one (name or value). Ours. */
  envValues: 100,
  envValueChars: 8192,
  /**
   * Deploys (`POST /v1/deploys`, `PUT /v1/deploys/<id>`) one developer may start per minute on a
   * host, failed ones too (the operator's are not limited). Ours: each compiles and checks its
   * bundle and may migrate, and a 16 MiB bundle costs the host's main thread stretches of
   * 30-400 ms and the process up to 2 GB while it loads.
   */
  deploysPerMinute: 30,
  /** Largest capsule bundle accepted by a deploy. */
  bundleBytes: 16 * 1024 * 1024,
  /**
   * A deploy's web client (the files of `client/` and its build), served at the deployment's
   * origin: files, bytes of one file, and bytes of all of them. Ours: a built web app is a few
   * MiB; the bounds keep one deploy body (base64) and what the database keeps per deployment small.
   */
  clientFiles: 1000,
  clientFileBytes: 8 * 1024 * 1024,
  clientBytes: 32 * 1024 * 1024,
  /**
   * Characters of a web client's file paths, all its files together. Ours: every host serving the
   * deployment keeps a version's paths in memory, and reads and parses its manifest again on the
   * main thread once they were pushed out; 1,000 paths of 1,000 characters (each within
   * `checkClientPath`) kept 2.1 MiB of heap per deployment and re-parsed 2-3 MB on every miss.
   * Room for 1,000 files of 256-character paths.
   */
  clientPathChars: 256 * 1024,
  /**
   * Bytes of client files the host keeps decoded in memory, all deployments together, and what
   * one developer's deployments may take of them: a tenant fetching its own large files in a loop
   * pushes out its own, not every tenant's (each miss reads and decodes on the main thread, about
   * 20 ms for an 8 MiB file). Ours.
   */
  clientFileCacheBytes: 64 * 1024 * 1024,
  clientFileCacheBytesPerOwner: 16 * 1024 * 1024,
  /**
   * Bytes of web-client versions' path maps the host keeps in memory (each counted as about 160
   * bytes a file beside two a path character), all deployments together, and one developer's
   * deployments' share; at most 256 versions in all, however small. Ours: bounded by count
   * alone, 256 versions of long paths could hold some 530 MiB of heap.
   */
  clientPathCacheBytes: 16 * 1024 * 1024,
  clientPathCacheBytesPerOwner: 4 * 1024 * 1024,
  clientPathCacheVersions: 256,
} as const;
