// `pvx status`: the VolumeExpansionRequests of a namespace (or all), active ones first, with what
// each grows, from which size to which, where it stands and for how long. The row building and
// ordering are pure (a request and the clock in, strings out); the command around them only reads.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { pvcAnnotations } from '../crds/keys.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { ApiError, isNotServed } from '../k8s/errors.ts';
import { listAll } from '../k8s/list.ts';
import type { CommandClient } from '../k8s/client.ts';
import { resources, volumeExpansionRequests } from '../k8s/resources.ts';
import { isFinished } from '../policies/request/phase.ts';
import { requestChange } from '../policies/request/decide.ts';
import { humanDuration } from '../policies/shared/duration.ts';
import { connect, namespaceOf } from './connect.ts';
import { formatTable } from './table.ts';
import { commands } from './commands.ts';
import { listingFlags, type ListingFlags } from './options.ts';
import { CommandFailure } from './errors.ts';

export const statusHelp = `usage: pvx status [-n NAMESPACE | -A] [-l SELECTOR] [-o table|json|yaml] [--kubeconfig PATH]

Lists VolumeExpansionRequests, active ones first: what each grows, from which size to which, the
VolumeAttributesClass it sets (from→to), its phase and reason, its age, how long it has been in its phase, and what is happening (the message;
shown for every request that has not completed, and for dry runs, whose message is the plan).

  -n, --namespace NS      the namespace (default: the kubeconfig context's, else "default")
  -A, --all-namespaces    every namespace (adds a NAMESPACE column)
  -l, --selector SEL      label selector, e.g. pvx.dev/policy=data
  -o, --output FORMAT     table (default), json or yaml (the requests themselves, as a v1 List)
  --kubeconfig PATH       kubeconfig file (env KUBECONFIG)`;

export interface StatusOptions extends ListingFlags {
  selector?: string;
}

export function parseStatusArgs(argv: string[]): StatusOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: commands.status.flags,
  });
  return { ...listingFlags(values, positionals, statusHelp), selector: values.selector };
}

export interface RequestRow {
  namespace: string;
  name: string;
  /** pvc/NAME, or sts/NAME/TEMPLATE for a StatefulSet's claims. */
  target: string;
  from: string;
  to: string;
  /** The VolumeAttributesClass it sets, "from→to" once the one before is known; "-" for none. */
  class: string;
  phase: string;
  reason: string;
  age: string;
  inPhase: string;
  message: string;
}

/** A request no operator has written status to yet has no phase; it is still active. */
export function isActive(req: VolumeExpansionRequest): boolean {
  return !isFinished(req);
}

function targetOf(req: VolumeExpansionRequest): string {
  const t = req.spec?.target ?? {};
  if (t.statefulSetName) return `sts/${t.statefulSetName}/${t.volumeClaimTemplate ?? ''}`;
  return `pvc/${t.pvcName ?? ''}`;
}

/** Distinct values in first-seen order, joined: a StatefulSet's claims usually agree. */
function distinct(values: (string | undefined)[]): string | undefined {
  const seen = [...new Set(values.filter((v): v is string => !!v))];
  return seen.length ? seen.join(',') : undefined;
}

/**
 * The claim's pvx annotations, for a request whose status lost the sizes: the operator writes the
 * previous capacity into the claim in the same patch as the size, and the status only after it.
 */
export type ClaimAnnotations = Record<string, string> | undefined;

function fromSize(req: VolumeExpansionRequest, claim: ClaimAnnotations): string {
  const s = req.status ?? {};
  // A request for a class alone changes no size: no "from" to show.
  if (req.spec && requestChange(req.spec) === 'class') return '-';
  const fromClaim = claim?.[pvcAnnotations.requestUID] === req.metadata?.uid ? claim?.[pvcAnnotations.previousCapacity] : undefined;
  return s.fromCapacity ?? distinct((s.targets ?? []).map((t) => t.fromCapacity)) ?? fromClaim ?? '-';
}

function toSize(req: VolumeExpansionRequest, claim: ClaimAnnotations): string {
  const s = req.status ?? {};
  const fromClaim = claim?.[pvcAnnotations.requestUID] === req.metadata?.uid ? claim?.[pvcAnnotations.targetSize] : undefined;
  // Until the operator resolved it, an increment is all there is to show.
  const planned = req.spec?.size ?? (req.spec?.increment ? `+${req.spec.increment}` : undefined);
  return s.targetSize ?? distinct((s.targets ?? []).map((t) => t.targetSize)) ?? fromClaim ?? planned ?? '-';
}

function classChange(req: VolumeExpansionRequest, claim: ClaimAnnotations): string {
  const s = req.status ?? {};
  const ours = claim?.[pvcAnnotations.requestUID] === req.metadata?.uid;
  const to =
    s.targetVolumeAttributesClassName ?? distinct((s.targets ?? []).map((t) => t.targetVolumeAttributesClassName)) ?? req.spec?.volumeAttributesClassName;
  if (!to) return '-';
  // The claim records "" for a claim that had no class.
  const recorded = ours ? claim?.[pvcAnnotations.previousVolumeAttributesClass] : undefined;
  const from = s.fromVolumeAttributesClassName ?? (recorded === '' ? '(none)' : recorded) ?? (s.timeline?.patchedAt ? '(none)' : undefined);
  return from ? `${from}→${to}` : to;
}

const since = (timestamp: string | Date | undefined, now: Date): string => {
  if (!timestamp) return '-';
  const t = new Date(timestamp).getTime();
  return Number.isNaN(t) ? '-' : humanDuration(now.getTime() - t);
};

/** One table row of a request. claim: the annotations of the claim it targets, when read. */
export function requestRow(req: VolumeExpansionRequest, now: Date, claim?: ClaimAnnotations): RequestRow {
  const s = req.status ?? {};
  const phase = s.phase ?? '-';
  // A completed request's message only restates the capacity; a dry run's is the plan itself.
  const showMessage = phase !== 'Completed' || s.reason === 'DryRun';
  const message = s.phase === undefined ? 'not picked up by the operator yet (is pvx running?)' : showMessage ? (s.message ?? '') : '';
  return {
    namespace: req.metadata?.namespace ?? '',
    name: req.metadata?.name ?? '',
    target: targetOf(req),
    from: fromSize(req, claim),
    to: toSize(req, claim),
    class: classChange(req, claim),
    phase,
    reason: s.reason ?? '-',
    age: since(req.metadata?.creationTimestamp, now),
    inPhase: s.phase === undefined ? '-' : since(s.phaseSince, now),
    // One line per row: messages are prose and may wrap an error text with newlines.
    message: message.replace(/\s*\n\s*/g, ' ').trim(),
  };
}

const createdAt = (req: VolumeExpansionRequest): number => new Date(req.metadata?.creationTimestamp ?? 0).getTime() || 0;

/** Active requests first (what needs attention), then finished; each by namespace, oldest first. */
export function sortRequests(requests: readonly VolumeExpansionRequest[]): VolumeExpansionRequest[] {
  return [...requests].sort(
    (a, b) =>
      Number(isActive(b)) - Number(isActive(a)) ||
      (a.metadata?.namespace ?? '').localeCompare(b.metadata?.namespace ?? '') ||
      createdAt(a) - createdAt(b) ||
      (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
  );
}

export function formatRows(rows: readonly RequestRow[], withNamespace: boolean): string {
  const headers = ['NAME', 'TARGET', 'FROM', 'TO', 'CLASS', 'PHASE', 'REASON', 'AGE', 'IN PHASE', 'MESSAGE'];
  const cells = rows.map((r) => [r.name, r.target, r.from, r.to, r.class, r.phase, r.reason, r.age, r.inPhase, r.message]);
  return withNamespace
    ? formatTable(
        ['NAMESPACE', ...headers],
        cells.map((c, i) => [(rows[i] as RequestRow).namespace, ...c]),
      )
    : formatTable(headers, cells);
}

/** The line printed instead of an empty table. */
export function noRequestsLine(namespace: string | undefined, selector?: string): string {
  const where = namespace === undefined ? 'any namespace' : `namespace ${namespace}`;
  return `no VolumeExpansionRequests in ${where}${selector ? ` matching ${selector}` : ''}`;
}

/** Output of `-o json|yaml`: the requests as a v1 List, the shape every Kubernetes client reads. */
export function formatList(requests: readonly VolumeExpansionRequest[], output: 'json' | 'yaml'): string {
  const list = { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items: requests };
  return output === 'json' ? JSON.stringify(list, null, 2) : stringify(list).trimEnd();
}

const crd = { group: volumeExpansionRequests.group, version: volumeExpansionRequests.version, plural: volumeExpansionRequests.resource };

/** The API errors a reader can fix, as a sentence saying how; undefined for any other error. */
export function explainReadError(err: unknown, namespace: string | undefined): CommandFailure | undefined {
  const where = namespace === undefined ? 'in any namespace' : `in namespace ${namespace}`;
  // Listing a collection answers 404 only when the API server does not serve the kind at all (an
  // absent namespace lists as empty).
  if (isNotServed(err))
    return new CommandFailure(`the VolumeExpansionRequest CRD (${crd.plural}.${crd.group}) is not installed in this cluster: run \`pvx install-crds\``);
  if (!(err instanceof ApiError)) return undefined;
  if (err.code === 403) return new CommandFailure(`not allowed to read VolumeExpansionRequests ${where}: ${err.message}`);
  if (err.code === 401) return new CommandFailure(`the cluster refused the kubeconfig's credentials: ${err.message}`);
  return undefined;
}

export interface RequestPage {
  items: VolumeExpansionRequest[];
  resourceVersion: string;
}

/** Every request in a namespace (undefined: all), page by page, with the list's resourceVersion. */
export async function listRequests(client: CommandClient, opts: { namespace?: string; labelSelector?: string; fieldSelector?: string }): Promise<RequestPage> {
  try {
    return await listAll<VolumeExpansionRequest>(client, volumeExpansionRequests, opts);
  } catch (err) {
    throw explainReadError(err, opts.namespace) ?? err;
  }
}

/**
 * The claim annotations of the unfinished single-claim requests whose status lacks the previous
 * capacity (normally none, so normally no reads). Unreadable claims are simply left out.
 */
async function claimAnnotations(client: CommandClient, requests: readonly VolumeExpansionRequest[]): Promise<Map<string, ClaimAnnotations>> {
  const wanted = requests.filter((r) => isActive(r) && r.spec?.target?.pvcName && !r.status?.fromCapacity);
  const found = new Map<string, ClaimAnnotations>();
  await Promise.all(
    wanted.map(async (r) => {
      const namespace = r.metadata?.namespace as string;
      const name = r.spec.target.pvcName as string;
      try {
        const pvc = await client.read(resources.persistentVolumeClaims, namespace, name);
        if (pvc) found.set(`${namespace}/${name}`, pvc.metadata?.annotations);
      } catch {
        // No claim (yet), or no right to read it: the row shows what the request says.
      }
    }),
  );
  return found;
}

export async function status(argv: string[]): Promise<number> {
  const opts = parseStatusArgs(argv);
  const { client, ...connected } = await connect(opts.kubeconfig);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(connected, opts.namespace);
  const { items } = await listRequests(client, { namespace, labelSelector: opts.selector });
  const requests = sortRequests(items);
  if (opts.output !== 'table') {
    process.stdout.write(`${formatList(requests, opts.output)}\n`);
    return 0;
  }
  if (requests.length === 0) {
    process.stdout.write(`${noRequestsLine(namespace, opts.selector)}\n`);
    return 0;
  }
  const claims = await claimAnnotations(client, requests);
  const now = new Date();
  const rows = requests.map((r) => requestRow(r, now, claims.get(`${r.metadata?.namespace}/${r.spec?.target?.pvcName}`)));
  process.stdout.write(`${formatRows(rows, opts.allNamespaces)}\n`);
  return 0;
}
