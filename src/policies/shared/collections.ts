// Grouping, as every pass over a cluster needs it (requests by claim, claims by policy, pods by
// claim): one linear pass, each group in the items' order. And a map kept to a bound, as every
// memory a long-running process keeps per object must be.

/** Items grouped by a key; items whose key is undefined are left out. */
export function groupBy<T>(items: Iterable<T>, keyOf: (item: T) => string | undefined): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/**
 * Sets `key` in a map kept to at most `bound` entries: a new key past the bound first drops the
 * oldest (a Map iterates in insertion order).
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, bound: number): void {
  if (!map.has(key) && map.size >= bound) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
