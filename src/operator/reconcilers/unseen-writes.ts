// Which of our own writes a cache has not shown yet. A reconcile that decides from a copy older
// than its last write would only meet a 409, or — for a change it made itself — read it as undone.
// The resourceVersion a write replaced is what a lagging cache still holds; once the cache holds any
// other, the write (or a later change) has reached it.

export class UnseenWrites {
  /** Per key, the resourceVersion our last write replaced. */
  private readonly replaced = new Map<string, string>();

  /** Our write replaced the object at `resourceVersion`. */
  wrote(key: string, resourceVersion: string): void {
    this.replaced.set(key, resourceVersion);
  }

  /** True while the cache's copy (at `cachedResourceVersion`) is from before our last write; forgets the write once it is not. */
  behind(key: string, cachedResourceVersion: string | undefined): boolean {
    const replaced = this.replaced.get(key);
    if (replaced === undefined) return false;
    if (cachedResourceVersion === replaced) return true;
    this.replaced.delete(key);
    return false;
  }

  forget(key: string): void {
    this.replaced.delete(key);
  }
}
