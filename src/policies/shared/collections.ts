// Grouping, as every pass over a cluster needs it (requests by claim, claims by policy, pods by
// claim): one linear pass, each group in the items' order.

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
