/**
 * Who is told when a deployment is gone or changed, here or on another host (when its
 * announcement arrives): connections to a deleted deployment close, results its previous code
 * computed are computed again. The registry reports both; the service forwards them here.
 */
export class DeploymentEvents {
  private readonly goneListeners = new Set<(id: string) => void>();
  private readonly changedListeners = new Set<(id: string) => void>();

  /**
   * Calls `listener` with the id of each deployment deleted from now on, here or by another host
   * (when its announcement arrives), so connections to it can be closed. Returns the unsubscribe.
   */
  onGone(listener: (id: string) => void): () => void {
    this.goneListeners.add(listener);
    return () => this.goneListeners.delete(listener);
  }

  /**
   * Calls `listener` with the id of each deployment deployed again or whose settings changed from
   * now on, here or on another host (when its announcement arrives), so results computed by its
   * previous code can be computed again. Returns the unsubscribe.
   */
  onChanged(listener: (id: string) => void): () => void {
    this.changedListeners.add(listener);
    return () => this.changedListeners.delete(listener);
  }

  /** Tells every {@link onGone} listener that deployment `id` is gone. */
  gone(id: string): void {
    for (const listener of this.goneListeners) listener(id);
  }

  /** Tells every {@link onChanged} listener that deployment `id` changed. */
  changed(id: string): void {
    for (const listener of this.changedListeners) listener(id);
  }
}
