// Names for objects pvx creates, made the way Kubernetes makes generated names: a readable prefix
// plus a suffix that makes the name unique. Kubernetes' suffix is random; ours is a hash of what
// identifies the object, so the same intent always gives the same name (a create retried after a
// lost response meets its own earlier object, not a twin) and different intents different names,
// whatever the length of the readable part — which is cut to fit, never the suffix.
import { createHash } from 'node:crypto';

/**
 * At most 63 characters: a valid DNS subdomain (what object names need) that is also a valid
 * label value and DNS label, so the name can be used wherever another object refers to it, and
 * stays readable in `kubectl get`.
 */
export const maxGeneratedNameLength = 63;
/** 16 hex digits: 64 bits of the SHA-256, so a collision between two intents is not a practical concern. */
const suffixLength = 16;

/**
 * `<readable parts joined by '-', lowercased, cut>-<hash of identity>`: only lowercase
 * alphanumerics and '-', starting and ending with an alphanumeric. Characters a name may not have
 * (uppercase is lowered; dots, which may not border a dash, become dashes) are replaced, and the
 * prefix is cut so that the whole is at most maxGeneratedNameLength.
 */
export function generatedName(readable: readonly string[], identity: readonly unknown[]): string {
  const hash = createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, suffixLength);
  const prefix = readable
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, maxGeneratedNameLength - suffixLength - 1)
    .replace(/^-+|-+$/g, '');
  return prefix ? `${prefix}-${hash}` : hash;
}
