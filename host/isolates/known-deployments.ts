/** What the host knows of its deployments now: the pool asks, never keeps. */
export interface KnownDeployments {
  /**
   * A deployment's id and incarnation, unique over the host's life, when known: what scopes the
   * code caches its isolates make after its code ran (see loadIsolate).
   */
  scopeOf(deploymentId: string): string | undefined;
  /** The artifact the deployment's newest record known to this host serves, when known. */
  artifactOf(deploymentId: string): string | undefined;
  /** The deployment's owning developer (null: unclaimed), when known: crash reports name it. */
  ownerOf(deploymentId: string): string | null | undefined;
}

/** What a pool of no host knows: nothing (tests, benchmarks). */
export const NOTHING_KNOWN: KnownDeployments = {
  scopeOf: () => undefined,
  artifactOf: () => undefined,
  ownerOf: () => undefined,
};
