// Label selection as pvx's CRDs express it (matchLabels).

/** True when every key of matchLabels is on the object with the same value; an empty selector takes all. */
export function matchesLabels(matchLabels: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return Object.entries(matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
}
