// Bounds on everything in pvx's objects that can grow: a list, a map, a string inside one. An
// object without them can be made as large as etcd allows (1.5 MiB), and every reader — pvx's
// caches, kubectl, the audit — pays for it on every read. The schemas enforce them at admission
// (a user's spec is refused); pvx keeps its own status writes within them (the request reconciler
// clips its messages, a StatefulSet request of more replicas than `targets` is refused, a policy's
// status lists at most `volumes` claims). Plain values: the operator reads them without TypeBox.
export const limits = {
  /** Labels in a matchLabels selector; its keys and values as Kubernetes bounds them (prefix 253 + "/" + name 63; value 63). */
  matchLabels: 64,
  labelKey: 317,
  labelValue: 63,
  /** An object name (DNS-1123 subdomain), a namespace (DNS-1123 label), a UID. */
  name: 253,
  namespace: 63,
  uid: 64,
  /** A quantity (10Gi), a phase or decision word, a machine-readable reason, a condition type. */
  quantity: 64,
  word: 32,
  reason: 128,
  conditionType: 316,
  /** A message shown for one item of a list (a StatefulSet target, a policy's volume). */
  itemMessage: 1024,
  /** A condition's message (metav1.Condition's bound). */
  conditionMessage: 32_768,
  /** StorageClass names a policy selects, and a cluster policy's guardrail allows. */
  storageClassNames: 32,
  allowedStorageClasses: 64,
  /** Claims a StatefulSet request grows: one target each. */
  targets: 500,
  /** Conditions of a request (pvx writes two: Accepted and Complete). */
  conditions: 16,
  /** Sizes recovery lowered a claim to (at most the driver's maximum and the capacity rounded up). */
  attemptedSizes: 16,
  /** Claims a policy's status lists (those needing attention first; the rest are counted). */
  volumes: 200,
} as const;

/** `text`, cut to at most `max` characters with an ellipsis when longer. */
export const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
