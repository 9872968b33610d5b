// Which of our own writes a cache has not shown yet. A reconcile that decides from a copy older
// than a write it made would only meet a 409, or — for a change it made itself — read it as undone.
// The resourceVersions our writes replaced are what a lagging cache still holds: a reconcile may
// write one object several times (a request's accepted plan, then its status after the claim's
// patch), and a cache still at the version before the first of them is as far behind as one at
// the version before the last. Once the cache holds any other version, every write (or a later
// change) has reached it.

/**
 * A cache still behind pvx's own write after this long lost the write's watch event (it would be
 * shown until the next relist): the object is read from the API server instead (seen: a request's
 * deadline not held while its cache kept the copy from before its accepted plan).
 */
export const staleCacheMs = 15_000;

/** What a reconcile may do with its cache's copy of an object pvx wrote. */
export type CacheState = 'current' | 'wait' | 'read-live';

export class UnseenWrites {
  /** Per key, the resourceVersions our writes replaced since the cache last caught up, and when the first of them was written. */
  private readonly replaced = new Map<string, { versions: Set<string>; sinceMs: number }>();
  private readonly nowMs: () => number;

  /** `nowMs`: a monotonic clock (default performance.now). */
  constructor(nowMs: () => number = () => performance.now()) {
    this.nowMs = nowMs;
  }

  /** Our write replaced the object at `resourceVersion`. */
  wrote(key: string, resourceVersion: string): void {
    const entry = this.replaced.get(key) ?? { versions: new Set<string>(), sinceMs: this.nowMs() };
    entry.versions.add(resourceVersion);
    this.replaced.set(key, entry);
  }

  /**
   * The cache's copy at `resourceVersion` is known to be behind the API server (a live read showed
   * another version, or none): read live at once while the cache still shows it.
   */
  knownBehind(key: string, resourceVersion: string): void {
    const entry = this.replaced.get(key) ?? { versions: new Set<string>(), sinceMs: this.nowMs() };
    entry.versions.add(resourceVersion);
    entry.sinceMs = Math.min(entry.sinceMs, this.nowMs() - staleCacheMs);
    this.replaced.set(key, entry);
  }

  /** True while the cache's copy (at `cachedResourceVersion`) is from before one of our writes; forgets them once it is not. */
  behind(key: string, cachedResourceVersion: string | undefined): boolean {
    return this.state(key, cachedResourceVersion) !== 'current';
  }

  /**
   * Whether the cache's copy shows our writes (current), is from before one of them and may yet
   * catch up (wait), or has been behind for staleCacheMs (read-live: its event was lost).
   */
  state(key: string, cachedResourceVersion: string | undefined): CacheState {
    const entry = this.replaced.get(key);
    if (entry === undefined) return 'current';
    if (cachedResourceVersion !== undefined && entry.versions.has(cachedResourceVersion)) {
      return this.nowMs() - entry.sinceMs < staleCacheMs ? 'wait' : 'read-live';
    }
    this.replaced.delete(key);
    return 'current';
  }

  /**
   * How soon a reconcile that found its cache behind (wait) looks again: when the copy would count
   * as stale. The write's watch event brings the key back as soon as the cache has it; this only
   * bounds the wait when that event is lost — polling before then finds the same copy (seen: a
   * parent request looked at every 5 s through a lagging watch, 123 reconciles in ten minutes).
   */
  msUntilStale(key: string): number {
    const entry = this.replaced.get(key);
    return entry ? Math.max(1, Math.ceil(staleCacheMs - (this.nowMs() - entry.sinceMs))) : staleCacheMs;
  }

  forget(key: string): void {
    this.replaced.delete(key);
  }

  /** Forgets the writes first made more than `ageMs` ago: a record only some keys are ever checked against stays bounded. */
  forgetOlderThan(ageMs: number): void {
    const now = this.nowMs();
    for (const [key, entry] of this.replaced) if (now - entry.sinceMs > ageMs) this.replaced.delete(key);
  }
}

/**
 * Objects we created that a cache has not shown yet. A decision made from that cache must count
 * them: the policy evaluator, its requests' cache lagging, would otherwise ask again for what it
 * has just asked for — a second raise of one claim on one measurement. An object is forgotten once
 * the cache shows it, or after maxAgeMs (monotonic): one deleted before the cache saw it never shows.
 */
export class UnseenCreates<T> {
  private readonly pending = new Map<string, { object: T; atMs: number }>();
  private readonly maxAgeMs: number;

  constructor(maxAgeMs: number) {
    this.maxAgeMs = maxAgeMs;
  }

  /** We created `object` (as it should be read until the cache has it) under `key` at `atMs`. */
  created(key: string, object: T, atMs: number): void {
    this.pending.set(key, { object, atMs });
  }

  /** Not ours after all: a create whose outcome was unknown did not happen. */
  forget(key: string): void {
    this.pending.delete(key);
  }

  /** When we created the object under `key`, if the cache has not shown it yet (as far as known) and it is not too old. */
  createdAt(key: string, nowMs: number): number | undefined {
    const p = this.pending.get(key);
    return p && nowMs - p.atMs <= this.maxAgeMs ? p.atMs : undefined;
  }

  /**
   * The keys of objects we created over `ageMs` ago that the cache still does not show: deleted
   * before it saw them, or their events lost — to be read from the API server.
   */
  longUnseen(cached: (key: string) => boolean, nowMs: number, ageMs: number): string[] {
    return [...this.pending].filter(([key, p]) => nowMs - p.atMs > ageMs && nowMs - p.atMs <= this.maxAgeMs && !cached(key)).map(([key]) => key);
  }

  /** The objects we created that the cache (`cached(key)`) does not show yet. */
  unseen(cached: (key: string) => boolean, nowMs: number): T[] {
    const out: T[] = [];
    for (const [key, p] of this.pending) {
      if (cached(key) || nowMs - p.atMs > this.maxAgeMs) this.pending.delete(key);
      else out.push(p.object);
    }
    return out;
  }
}
