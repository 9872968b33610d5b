// What must hold of the two opt-ins that act on workloads, whatever the interleaving — checked from
// the API server's record (the fake's write log and store), never from pvx's memory:
//   - no StatefulSet lost: a StatefulSet pvx deleted is absent only while a request holds its
//     record (status.statefulSetTemplate, Recorded or Deleted, with the record), and exists again
//     once everything settled;
//   - pvx deletes a pod only by an eviction its request recorded first, at most one pod per request;
//   - one pod of a workload at a time: pvx evicts no pod of a controller while another pod it
//     evicted of that controller has not been replaced by a running one.
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { FakeKubeClient, WriteRecord } from '../../src/k8s/testing/fake-client.ts';
import { resources, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import type { Violation } from './invariants.ts';
import type { Trace } from './trace.ts';

const claimsOf = (p: V1Pod) => (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));

export class WorkloadInvariants {
  /** StatefulSets (namespace/name) pvx has deleted at least once. */
  private readonly deletedByPvx = new Set<string>();
  /** Per request UID, the pods (UIDs) pvx evicted for it. */
  private readonly evictedFor = new Map<string, Set<string>>();
  /** Pods pvx evicted, with their owner and the claims they mounted, until a running pod mounts those claims again. */
  private readonly awaitingReplacement: { owner: string; pod: string; claims: string[] }[] = [];
  private readonly reported = new Set<string>();
  /** Per pod UID, the requests (namespace/name/uid) whose status recorded it as the pod they evict, ever. */
  private readonly recordedEvictions = new Map<string, string[]>();

  private readonly api: FakeKubeClient;
  private readonly trace: Trace;
  private readonly now: () => number;
  private readonly violations: Violation[];
  private readonly isPvx: (actor: string | undefined) => boolean;

  constructor(api: FakeKubeClient, trace: Trace, now: () => number, violations: Violation[], isPvx: (actor: string | undefined) => boolean) {
    this.api = api;
    this.trace = trace;
    this.now = now;
    this.violations = violations;
    this.isPvx = isPvx;
  }

  private violate(rule: string, subject: string, message: string): void {
    const id = `${rule} ${subject}`;
    if (this.reported.has(id)) return;
    this.reported.add(id);
    this.violations.push({ rule, subject, message, at: this.now() });
    this.trace.add('violation', `${rule} ${subject}: ${message}`);
  }

  onWrite(w: WriteRecord): void {
    if (!this.isPvx(w.actor)) return;
    if (w.resource === volumeExpansionRequests.resource) {
      const r = w.after as VolumeExpansionRequest;
      const podUID = r.status?.eviction?.podUID;
      if (podUID)
        this.recordedEvictions.set(podUID, [
          ...new Set([...(this.recordedEvictions.get(podUID) ?? []), `${r.metadata.namespace}/${r.metadata.name}/${r.metadata.uid}`]),
        ]);
    }
    if (
      w.resource === resources.statefulSets.resource &&
      w.verb === 'update' &&
      w.after.metadata?.deletionTimestamp &&
      !w.before?.metadata?.deletionTimestamp
    ) {
      const key = `${w.after.metadata.namespace}/${w.after.metadata.name}`;
      this.deletedByPvx.add(key);
      this.trace.add('write', `${w.actor} deletes StatefulSet ${key} (propagation Orphan)`);
    }
    if (w.resource === resources.statefulSets.resource && w.verb === 'create')
      this.trace.add('write', `${w.actor} creates StatefulSet ${w.after.metadata?.namespace}/${w.after.metadata?.name} again`);
    if (w.resource === resources.pods.resource && w.verb === 'delete') this.onEviction(w.before as V1Pod);
  }

  /** pvx deleted a pod: only by an eviction a request recorded first, one pod per request, one pod of a workload at a time. */
  private onEviction(pod: V1Pod): void {
    const uid = pod.metadata?.uid as string;
    const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    this.trace.add('write', `pvx evicts pod ${name}`);
    // Recorded first: a request's status named the pod before it went (the request may be gone since).
    const requests = this.recordedEvictions.get(uid) ?? [];
    if (requests.length === 0)
      this.violate('eviction-recorded-first', name, `pvx deleted pod ${name} (uid ${uid}), which no request recorded as the pod it evicts`);
    for (const r of requests) {
      const requestUID = r.slice(r.lastIndexOf('/') + 1);
      const pods = this.evictedFor.get(requestUID) ?? new Set<string>();
      pods.add(uid);
      this.evictedFor.set(requestUID, pods);
      if (pods.size > 1)
        this.violate(
          'one-eviction-per-request',
          r.slice(0, r.lastIndexOf('/')),
          `evicted ${pods.size} pods (${[...pods].join(', ')}); a request evicts at most one`,
        );
    }
    const owner = pod.metadata?.ownerReferences?.find((o) => o.controller)?.uid ?? '';
    this.replaced();
    const waiting = this.awaitingReplacement.find((e) => e.owner === owner && owner !== '');
    if (waiting)
      this.violate(
        'one-pod-of-a-workload-at-a-time',
        name,
        `evicted while pod ${waiting.pod} of the same controller, evicted before, has not been replaced by a running pod`,
      );
    this.awaitingReplacement.push({ owner, pod: name, claims: claimsOf(pod) });
  }

  /** Drops the evictions whose claims a running pod mounts again, and those of pods their StatefulSet no longer runs (scaled down). */
  private replaced(): void {
    const running = this.api.peek<V1Pod>(resources.pods).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    const sets = this.api.peek<V1StatefulSet>(resources.statefulSets);
    const gone = (pod: string) => {
      const [ns, name] = pod.split('/') as [string, string];
      const sts = sets.find((s) => s.metadata?.namespace === ns && name.startsWith(`${s.metadata?.name}-`));
      const ordinal = Number(name.slice((sts?.metadata?.name?.length ?? 0) + 1));
      const start = sts?.spec?.ordinals?.start ?? 0;
      return sts !== undefined && Number.isInteger(ordinal) && (ordinal < start || ordinal >= start + (sts.spec?.replicas ?? 1));
    };
    for (let i = this.awaitingReplacement.length - 1; i >= 0; i--) {
      const e = this.awaitingReplacement[i] as { pod: string; claims: string[] };
      if (gone(e.pod) || e.claims.every((c) => running.some((p) => claimsOf(p).includes(c)))) this.awaitingReplacement.splice(i, 1);
    }
  }

  /** A StatefulSet pvx deleted is absent only while a request holds its record. */
  checkStep(): void {
    if (this.awaitingReplacement.length > 0) this.replaced();
    if (this.deletedByPvx.size === 0) return;
    const present = new Set(this.api.peek<V1StatefulSet>(resources.statefulSets).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`));
    const requests = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests);
    for (const key of this.deletedByPvx) {
      if (present.has(key)) continue;
      const held = requests.some((r) => {
        const t = r.status?.statefulSetTemplate;
        return `${r.metadata.namespace}/${t?.statefulSetName}` === key && (t?.phase === 'Recorded' || t?.phase === 'Deleted') && Boolean(t.record);
      });
      if (!held) this.violate('no-statefulset-lost', key, `StatefulSet ${key}, deleted by pvx, is gone and no request holds its record`);
    }
  }

  /** Once everything settled, every StatefulSet pvx deleted exists again, and no template step is left under way. */
  checkSettled(): void {
    this.checkStep();
    for (const r of this.unsettled())
      this.violate(
        'template-update-settles',
        `${r.metadata.namespace}/${r.metadata.name}`,
        `after the quiet period still UpdatingTemplate (${r.status?.reason ?? ''}: ${r.status?.message ?? ''})`,
      );
    const present = new Set(
      this.api
        .peek<V1StatefulSet>(resources.statefulSets)
        .filter((s) => !s.metadata?.deletionTimestamp)
        .map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`),
    );
    for (const key of this.deletedByPvx)
      if (!present.has(key)) this.violate('no-statefulset-lost', key, `StatefulSet ${key}, deleted by pvx, does not exist after the quiet period`);
  }

  /** Requests whose template step is under way: not settled, whatever their children say. */
  unsettled(): VolumeExpansionRequest[] {
    return this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).filter((r) => r.status?.phase === 'UpdatingTemplate');
  }
}
