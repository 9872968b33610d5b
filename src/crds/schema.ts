// Building blocks shared by pvx's CRD schemas: CEL rules for quantities and durations, checked by
// the API server at admission (and again by the operator).
import { Type } from '@sinclair/typebox';

export const cel = (rule: string, message: string, extra: Record<string, string> = {}) => ({ rule, message, ...extra });

/** A positive Kubernetes quantity (CEL's quantity library). */
export const positiveQuantity = (description: string, extra: Record<string, unknown> = {}) =>
  Type.String({
    description,
    maxLength: 64,
    ...extra,
    'x-kubernetes-validations': [cel("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))", 'must be a positive quantity such as 10Gi')],
  });

/** A positive Go-style duration: 30m, 1h30m, 90s. */
export const positiveDuration = (description: string) =>
  Type.String({
    description,
    maxLength: 32,
    'x-kubernetes-validations': [cel("self.matches('^([0-9]+(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')", 'must be a positive duration such as 30m or 1h30m')],
  });
