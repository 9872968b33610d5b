// Reading the flags shared by the commands that read a namespace or all of them and print a table
// or a document (audit, status, plan, df), and by those that decide as the operator does (run,
// plan, audit, df, why: --modification-budget, --max-volume-size): one validation, one message for each mistake. The flags
// themselves are defined in commands.ts.
import type { MaxVolumeSize, ModificationBudget } from '../policies/budget/drivers.ts';
import { readBytes } from '../k8s/quantity.ts';
import { parseDuration } from '../policies/shared/duration.ts';
import { outputFormats } from './commands.ts';
import { UsageError } from './errors.ts';

export type OutputFormat = (typeof outputFormats)[number];

export interface ListingFlags<Format extends string = OutputFormat> {
  namespace?: string;
  allNamespaces: boolean;
  output: Format;
  kubeconfig?: string;
}

/** A flag's value, if it is one of the allowed ones; a usage error naming them otherwise. */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got "${value}"`);
}

/** -n/-A/-o/--kubeconfig read and checked (commands.ts, listingOptions); formats: the command's -o choices. */
export function listingFlags<Format extends string = OutputFormat>(
  values: { namespace?: string; 'all-namespaces'?: boolean; output?: string; kubeconfig?: string },
  positionals: string[],
  help: string,
  formats: readonly Format[] = outputFormats as unknown as readonly Format[],
): ListingFlags<Format> {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${help}`);
  return { ...namespaceScope(values), output: oneOf('--output', values.output ?? 'table', formats), kubeconfig: values.kubeconfig };
}

/** -n NS or -A (not both). */
export function namespaceScope(values: { namespace?: string; 'all-namespaces'?: boolean }): { namespace?: string; allNamespaces: boolean } {
  const allNamespaces = values['all-namespaces'] ?? false;
  if (allNamespaces && values.namespace !== undefined) throw new UsageError('pass either -n NAMESPACE or -A, not both');
  return { namespace: values.namespace, allNamespaces };
}

/** A CSI driver's name as CSIDriver objects allow it: 63 characters or less, alphanumerics, '-' and '.' between. */
const driverName = /^[A-Za-z0-9]([-A-Za-z0-9.]{0,61}[A-Za-z0-9])?$/;

/**
 * --modification-budget: DRIVER=COUNT/DURATION (4/24h, 1/6h, 2/10m) or DRIVER=none, given once or
 * more, each value a comma-separated list; the environment's value when no flag is given. Every
 * mistake is refused in one line naming the value: a driver named twice, a count that is not a
 * whole number from 1, a duration that is not positive.
 */
export function modificationBudgetsFlag(values: readonly string[] | undefined, envText: string | undefined): Record<string, ModificationBudget | null> {
  const items = (values ?? (envText === undefined ? [] : [envText])).flatMap((v) => v.split(',')).map((v) => v.trim());
  const budgets: Record<string, ModificationBudget | null> = {};
  for (const item of items) {
    const m = /^([^=]*)=(?:none|(\d{1,6})\/([^:]+)(:performance)?)$/.exec(item);
    const shape = `--modification-budget takes DRIVER=COUNT/DURATION[:performance] (e.g. ebs.csi.aws.com=4/24h, pd.csi.storage.gke.io=1/4h:performance) or DRIVER=none, got "${item}"`;
    if (!m) throw new UsageError(shape);
    const [, driver = '', count, duration, performance] = m;
    if (!driverName.test(driver)) throw new UsageError(`--modification-budget: "${driver}" is not a CSI driver name (e.g. ebs.csi.aws.com), in "${item}"`);
    if (driver in budgets) throw new UsageError(`--modification-budget names ${driver} twice ("${item}"): give one budget per driver`);
    if (count === undefined) {
      budgets[driver] = null;
      continue;
    }
    const windowMs = parseDuration(duration ?? '');
    if (Number(count) < 1) throw new UsageError(`--modification-budget: the count must be a whole number from 1, got "${item}" (DRIVER=none for no budget)`);
    if (windowMs === undefined || windowMs <= 0)
      throw new UsageError(`--modification-budget: the window must be a positive duration such as 24h or 10m, got "${item}"`);
    budgets[driver] = { count: Number(count), windowMs, ...(performance ? { counts: 'performance' as const } : {}) };
  }
  return budgets;
}

/**
 * --max-volume-size: DRIVER=SIZE (the largest volume the driver makes, e.g. csi.example.com=16Ti)
 * or DRIVER=class-parameter:NAME (each StorageClass's parameter NAME says it), given once or more,
 * each value a comma-separated list; the environment's value when no flag is given. A request
 * above it is refused before anything is written (ExceedsDriverLimit), a policy stops there.
 */
export function maxVolumeSizesFlag(values: readonly string[] | undefined, envText: string | undefined): Record<string, MaxVolumeSize> {
  const items = (values ?? (envText === undefined ? [] : [envText])).flatMap((v) => v.split(',')).map((v) => v.trim());
  const limits: Record<string, MaxVolumeSize> = {};
  for (const item of items) {
    const m = /^([^=]*)=(?:class-parameter:([A-Za-z0-9._/-]{1,253})|(.+))$/.exec(item);
    if (!m) throw new UsageError(`--max-volume-size takes DRIVER=SIZE (e.g. csi.example.com=16Ti) or DRIVER=class-parameter:NAME, got "${item}"`);
    const [, driver = '', parameter, size] = m;
    if (!driverName.test(driver)) throw new UsageError(`--max-volume-size: "${driver}" is not a CSI driver name (e.g. ebs.csi.aws.com), in "${item}"`);
    if (driver in limits) throw new UsageError(`--max-volume-size names ${driver} twice ("${item}"): give one limit per driver`);
    if (parameter !== undefined) {
      limits[driver] = { classParameter: parameter };
      continue;
    }
    const bytes = readBytes(size);
    if (bytes === undefined || bytes <= 0n) throw new UsageError(`--max-volume-size: the size must be a positive quantity such as 16Ti, got "${item}"`);
    limits[driver] = { bytes };
  }
  return limits;
}
