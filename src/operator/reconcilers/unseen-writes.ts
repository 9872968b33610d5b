// Which of our own writes a cache has not shown yet. A reconcile that decides from a copy older
// than a write it made would only meet a 409, or — for a change it made itself — read it as undone.
// The resourceVersions our writes replaced are what a lagging cache still holds: a reconcile may
// write one object several times (a request's accepted plan, then its status after the claim's
// patch), and a cache still at the version before the first of them is as far behind as one at
// the version before the last. Once the cache holds any other version, every write (or a later
// change) has reached it.

export class UnseenWrites {
  /** Per key, the resourceVersions our writes replaced since the cache last caught up. */
  private readonly replaced = new Map<string, Set<string>>();

  /** Our write replaced the object at `resourceVersion`. */
  wrote(key: string, resourceVersion: string): void {
    const versions = this.replaced.get(key) ?? new Set<string>();
    versions.add(resourceVersion);
    this.replaced.set(key, versions);
  }

  /** True while the cache's copy (at `cachedResourceVersion`) is from before one of our writes; forgets them once it is not. */
  behind(key: string, cachedResourceVersion: string | undefined): boolean {
    const versions = this.replaced.get(key);
    if (versions === undefined) return false;
    if (cachedResourceVersion !== undefined && versions.has(cachedResourceVersion)) return true;
    this.replaced.delete(key);
    return false;
  }

  forget(key: string): void {
    this.replaced.delete(key);
  }
}
