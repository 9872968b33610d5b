// Flags shared by the commands that read a namespace or all of them and print a table or a
// document (audit, status, plan): one spelling, one validation, one message for each mistake.
import { UsageError } from './usage.ts';

export const outputFormats = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** parseArgs options: -n/--namespace, -A/--all-namespaces, -o/--output, --kubeconfig. */
export const listingOptions = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A', default: false },
  output: { type: 'string', short: 'o', default: 'table' },
  kubeconfig: { type: 'string' },
} as const;

export interface ListingFlags {
  namespace?: string;
  allNamespaces: boolean;
  output: OutputFormat;
  kubeconfig?: string;
}

/** A flag's value, if it is one of the allowed ones; a usage error naming them otherwise. */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got "${value}"`);
}

export function listingFlags(values: { namespace?: string; 'all-namespaces'?: boolean; output?: string; kubeconfig?: string }, positionals: string[], help: string): ListingFlags {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${help}`);
  const allNamespaces = values['all-namespaces'] ?? false;
  if (allNamespaces && values.namespace !== undefined) throw new UsageError('pass either -n NAMESPACE or -A, not both');
  return { namespace: values.namespace, allNamespaces, output: oneOf('--output', values.output ?? 'table', outputFormats), kubeconfig: values.kubeconfig };
}
