// The claim-ledger reconciler: records on a claim the modifications made to it outside pvx, so
// that its driver's budget counts them (src/policies/budget/ledger.ts decides, here only the write). One
// key per claim. A claim whose spec (size, VolumeAttributesClass) moved away from the baseline its
// ledger holds gets one annotation patch, preconditioned on the resourceVersion the decision was
// made from (on a conflict, once more from the API server's copy: see reconcile), and a Normal
// Event on the claim when a modification was counted; a claim that shows nothing new costs
// nothing. pvx's own patches carry their ledger entry themselves, in the same write as the size
// (the request reconciler), so this never sees them as changes.
import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { pvcAnnotations } from '../../crds/keys.ts';
import type { KubeClient } from '../../k8s/client.ts';
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';
import { readLive } from '../../k8s/list.ts';
import { objectKey, resources } from '../../k8s/resources.ts';
import { budgetText, inWindow } from '../../policies/budget/budget.ts';
import { defaultDriverProfiles, type DriverProfiles } from '../../policies/budget/drivers.ts';
import { claimSpec, ledgerText, observeClaim, observedAlike, type Ledger } from '../../policies/budget/ledger.ts';
import type { ReconcileResult, Wake } from '../runtime/controller.ts';
import { ConflictError } from '../runtime/errors.ts';
import type { Informer, InformerHandlers } from '../../k8s/informer.ts';
import { UnseenWrites } from './unseen-writes.ts';

export interface ClaimLedgerDeps {
  client: KubeClient;
  pvcs: Informer<V1PersistentVolumeClaim>;
  storageClasses: Informer<V1StorageClass>;
  logger: Logger;
  /** The leader-election fence: writes only while this is true. */
  canWrite: () => boolean;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
  now?: () => Date;
}

/**
 * What a StorageClass created (again) wakes: the claims of that class. A claim whose class is gone
 * has no driver, so no budget, and a change made to it meanwhile is not counted then; the class
 * back, the change shows against its baseline, but no claim event may come to say so (the resync
 * is ten minutes away).
 */
export function ledgerClassEvents(wake: Wake, claimsOfClass: (className: string) => string[]): InformerHandlers<V1StorageClass> {
  const enqueue = (sc: V1StorageClass) => claimsOfClass(sc.metadata?.name ?? '').forEach((k) => wake(k));
  // A provisioner changed is a driver changed: another budget, or none (a class re-created under its name).
  return { onAdd: enqueue, onUpdate: (old, sc) => old.provisioner !== sc.provisioner && enqueue(sc) };
}

export class ClaimLedgerRecorder {
  private readonly d: ClaimLedgerDeps;
  private readonly now: () => Date;
  /** Our ledger writes the claims' cache has not shown yet. */
  private readonly unseen = new UnseenWrites();

  constructor(deps: ClaimLedgerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Whether a claim event may change what the claim shows: its spec's size or class, its ledger,
   * a class change taken up or done, or its binding (a pending claim's changes modify no volume).
   * Status updates of a resize, which come often, change none of these.
   */
  static worthALook(old: V1PersistentVolumeClaim, next: V1PersistentVolumeClaim): boolean {
    const a = claimSpec(old);
    const b = claimSpec(next);
    return (
      a.size !== b.size ||
      a.class !== b.class ||
      // A class change on a claim with none applied shows only once the resizer takes it up.
      (old.status?.modifyVolumeStatus === undefined) !== (next.status?.modifyVolumeStatus === undefined) ||
      old.metadata?.annotations?.[pvcAnnotations.modifications] !== next.metadata?.annotations?.[pvcAnnotations.modifications] ||
      old.status?.phase !== next.status?.phase
    );
  }

  /**
   * What wakes a claim's ledger: the claim's changes that may change what it shows (worthALook),
   * and its StorageClass created (again) (ledgerClassEvents).
   */
  watch(wake: Wake): void {
    const { pvcs } = this.d;
    pvcs.on({
      onAdd: (pvc) => wake(objectKey(pvc)),
      onUpdate: (old, pvc) => ClaimLedgerRecorder.worthALook(old, pvc) && wake(objectKey(pvc)),
      onDelete: (pvc) => wake(objectKey(pvc)),
    });
    this.d.storageClasses.on(
      ledgerClassEvents(wake, (className) =>
        pvcs
          .list()
          .filter((c) => c.spec?.storageClassName === className)
          .map(objectKey),
      ),
    );
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    let claim = this.d.pvcs.get(key);
    if (!claim) {
      this.unseen.forget(key);
      return {};
    }
    // The cache has not seen our last write yet: its event brings the claim back. Deciding from
    // the copy before it would only meet a 409. Behind for long, the event was lost: read it live.
    const state = this.unseen.state(key, claim.metadata?.resourceVersion);
    if (state === 'wait') return { requeueAfterMs: this.unseen.msUntilStale(key) };
    if (state === 'read-live') {
      claim = await this.readClaim(claim.metadata?.namespace as string, claim.metadata?.name as string);
      this.unseen.forget(key);
      if (!claim) return {};
    }
    const className = claim.spec?.storageClassName;
    const driver = (this.d.profiles ?? defaultDriverProfiles)(className ? this.d.storageClasses.get(className)?.provisioner : undefined);
    const budget = driver.modificationBudget;
    const now = this.now();
    let observed = observeClaim(claim, budget, now);
    if (observed.kind === 'none') return {};

    this.fence();
    const [namespace, name] = [claim.metadata?.namespace as string, claim.metadata?.name as string];
    let decidedFrom = claim;
    let written = await this.write(claim, observed.ledger);
    if (written === 'conflict') {
      // The claim changed after the cache's copy. Deciding again from the cache would meet 409
      // for as long as the cache lags, and a change under way writes the claim's status every few
      // seconds (the resizer, the modifier, the kubelet) — while on a claim without a ledger the
      // change shows only until it completes. So read the API server's copy, as client-go's
      // RetryOnConflict does: the same spec and ledger as decided on means only the status moved,
      // and what the cached copy showed still holds (a change it saw under way was made, even if
      // it is done now); anything else is decided again.
      const live = await this.readClaim(namespace, name);
      if (!live) return {};
      if (!observedAlike(claim, live)) {
        observed = observeClaim(live, budget, now);
        if (observed.kind === 'none') return {};
      }
      this.fence();
      decidedFrom = live;
      written = await this.write(live, observed.ledger);
      if (written === 'conflict') throw new ConflictError(`claim ${key} changed meanwhile, twice: deciding again`);
    }
    if (written === 'gone') return {};
    this.unseen.wrote(key, decidedFrom.metadata?.resourceVersion ?? '');
    const uid = decidedFrom.metadata?.uid;
    const log = this.d.logger.child({ controller: 'claim-ledger', namespace, name });
    log.info({ change: observed.summary }, observed.entry ? 'recorded a modification made outside pvx' : 'moved the ledger baseline');
    if (observed.entry && budget) {
      const counted = inWindow(
        budget,
        observed.ledger.mods.map((m) => ({ at: new Date(m.at), by: m.by })),
        now,
      ).length;
      await this.d.client
        .emitEvent({
          regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid },
          type: 'Normal',
          reason: 'ModificationObserved',
          message: `${observed.summary}: counted against ${driver.name}'s budget of ${budgetText(budget)} (the claim's ledger holds ${counted} in the window)`,
        })
        .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'could not record an Event'));
    }
    return {};
  };

  /** The leader-election fence, before each write. */
  private fence(): void {
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader (or the lease is not renewed): not recording a claim modification', 2000);
  }

  /** The ledger written, preconditioned on the copy it was decided from (its UID and resourceVersion). */
  private async write(claim: V1PersistentVolumeClaim, ledger: Ledger): Promise<'written' | 'conflict' | 'gone'> {
    const [namespace, name] = [claim.metadata?.namespace as string, claim.metadata?.name as string];
    try {
      const patch = {
        uid: claim.metadata?.uid ?? '',
        resourceVersion: claim.metadata?.resourceVersion ?? '',
        annotations: { [pvcAnnotations.modifications]: ledgerText(ledger) },
      };
      await this.d.client.patchPvcAnnotations(namespace, name, patch);
      return 'written';
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) return 'conflict';
      if (err instanceof ApiError && err.code === 404) return 'gone';
      // A refusal (400/422) would otherwise end the retries until the claim's spec changes again,
      // and the modification would go uncounted: the ledger is a small annotation of pvx's own,
      // so a refusal of it is not expected to last. Retried with backoff, never dropped.
      if (err instanceof ApiError && (err.code === 400 || err.code === 422))
        throw new Error(`the API server refused the ledger annotation of ${namespace}/${name} (${err.code}): ${err.message}; retrying`, { cause: err });
      throw err;
    }
  }

  /** The claim as the API server has it now (not the cache's copy); undefined when it is gone. */
  private async readClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    return readLive<V1PersistentVolumeClaim>(this.d.client, resources.persistentVolumeClaims, namespace, name);
  }
}
