// Building blocks shared by pvx's CRD schemas: CEL rules for quantities and durations, checked by
// the API server at admission (and again by the operator).
import { Type } from '@sinclair/typebox';
import { limits } from './limits.ts';

export const cel = (rule: string, message: string, extra: Record<string, string> = {}) => ({ rule, message, ...extra });

/** A positive Kubernetes quantity (CEL's quantity library). */
export const positiveQuantity = (description: string, extra: Record<string, unknown> = {}) =>
  Type.String({
    description,
    maxLength: 64,
    ...extra,
    'x-kubernetes-validations': [cel("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))", 'must be a positive quantity such as 10Gi')],
  });

/** A label selector's matchLabels: bounded in count, keys and values as Kubernetes bounds labels. */
export const matchLabels = (description: string) =>
  Type.Object(
    {
      matchLabels: Type.Optional(
        Type.Record(Type.String(), Type.String({ maxLength: limits.labelValue }), {
          maxProperties: limits.matchLabels,
          'x-kubernetes-validations': [cel(`self.all(k, k.size() <= ${limits.labelKey})`, `a label key is at most ${limits.labelKey} characters`)],
        }),
      ),
    },
    { description },
  );

/** An object's name (a StorageClass's, a claim's): a DNS-1123 subdomain's length. */
export const objectName = (opts: Record<string, unknown> = {}) => Type.String({ maxLength: limits.name, ...opts });

/** A positive Go-style duration: 30m, 1h30m, 90s. */
export const positiveDuration = (description: string) =>
  Type.String({
    description,
    maxLength: 32,
    'x-kubernetes-validations': [
      cel("self.matches('^([0-9]+(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')", 'must be a positive duration such as 30m or 1h30m'),
    ],
  });
