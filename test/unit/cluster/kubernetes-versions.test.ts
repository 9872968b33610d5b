import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildGroups, buildUnits, selectedUnits } from '../../cluster/build.ts';
import { checkStateVersion, kubernetesLine } from '../../cluster/cluster.ts';
import { defaultKubernetesVersion, kubernetesMinor, kubernetesReleases, selectKubernetesVersion } from '../../cluster/layout.ts';

describe('selectKubernetesVersion', () => {
  it('defaults to the first release when unset or empty', () => {
    expect(selectKubernetesVersion(undefined)).toBe('v1.34.4');
    expect(selectKubernetesVersion('')).toBe(defaultKubernetesVersion);
  });

  it('takes a listed release with or without the leading v', () => {
    expect(selectKubernetesVersion('v1.37.2')).toBe('v1.37.2');
    expect(selectKubernetesVersion('1.37.2')).toBe('v1.37.2');
  });

  it('refuses a release the cluster does not build, naming the ones it does', () => {
    expect(() => selectKubernetesVersion('v1.36.3')).toThrow(/v1\.34\.4 and v1\.37\.2/);
  });

  it('reads the minor', () => {
    expect(kubernetesMinor('v1.37.2')).toBe(37);
  });
});

describe('Kubernetes build units', () => {
  const k8sUnits = buildUnits.filter((u) => u.name === 'kubernetes');

  it('has one unit per release, each with its own module and version stamp', () => {
    expect(k8sUnits.map((u) => u.version)).toEqual(kubernetesReleases.map((r) => r.version));
    expect(new Set(k8sUnits.map((u) => u.moduleDir)).size).toBe(k8sUnits.length);
    for (const u of k8sUnits) {
      expect(u.ldflags).toContain(`-X k8s.io/component-base/version.gitVersion=${u.version}`);
      expect(u.ldflags).toContain(`-X k8s.io/client-go/pkg/version.gitMinor=${kubernetesMinor(u.version)}`);
    }
  });

  it('builds kube-proxy with the rest of each release', () => {
    for (const u of k8sUnits) expect(u.outputs['kube-proxy']).toBe('k8s.io/kubernetes/cmd/kube-proxy');
  });

  it('pins each release in its module: the version, every staging replace at the same patch, every output as a tool', () => {
    for (const u of k8sUnits) {
      const gomod = readFileSync(join(u.moduleDir, 'go.mod'), 'utf8');
      expect(gomod).toMatch(new RegExp(`^\\s*k8s\\.io/kubernetes ${u.version.replace(/\./g, '\\.')}\\b`, 'm'));
      const staging = `v0.${u.version.slice(3)}`;
      const replaces = [...gomod.matchAll(/^\s*(k8s\.io\/[\w-]+) => (k8s\.io\/[\w-]+) (\S+)$/gm)];
      expect(replaces.length).toBeGreaterThanOrEqual(31);
      for (const [, from, to, version] of replaces) {
        expect(to).toBe(from);
        expect(version).toBe(staging);
      }
      const tools =
        /^tool \(([^)]*)\)/m
          .exec(gomod)?.[1]
          ?.split('\n')
          .map((l) => l.trim()) ?? [];
      for (const pkg of Object.values(u.outputs)) expect(tools).toContain(pkg);
    }
  });

  it("builds a release's six binaries in one go invocation, and an output go would name otherwise alone", () => {
    for (const u of k8sUnits) expect(buildGroups(u.outputs).map((g) => g.length)).toEqual([6]);
    const etcd = buildUnits.find((u) => u.name === 'etcd');
    expect(buildGroups(etcd?.outputs ?? {})).toEqual([[['etcd', 'go.etcd.io/etcd/server/v3']]]);
    expect(buildGroups({ a: 'x/a', b: 'x/b', c: 'x/v3', d: '.' })).toEqual([
      [
        ['a', 'x/a'],
        ['b', 'x/b'],
      ],
      [['c', 'x/v3']],
      [['d', '.']],
    ]);
  });

  it('builds the CSI sidecars, the EBS driver and helm from one module, so their shared libraries compile once', () => {
    const clients = buildUnits.filter((u) => ['csi-provisioner', 'csi-resizer', 'aws-ebs-csi-driver', 'helm'].includes(u.name));
    expect(clients).toHaveLength(4);
    expect(new Set(clients.map((u) => u.moduleDir)).size).toBe(1);
    const gomod = readFileSync(join(clients[0]?.moduleDir ?? '', 'go.mod'), 'utf8');
    for (const u of clients) for (const pkg of Object.values(u.outputs)) expect(gomod).toContain(`\t${pkg}\n`);
  });

  it('selects the chosen release only, or every release with all', () => {
    const names = (units: typeof buildUnits) => units.map((u) => `${u.name}@${u.version}`);
    const for137 = names(selectedUnits(false, 'v1.37.2'));
    expect(for137).toContain('kubernetes@v1.37.2');
    expect(for137).not.toContain('kubernetes@v1.34.4');
    // etcd and the rest are the same for every release.
    expect(for137).toContain('etcd@v3.6.4');
    expect(names(selectedUnits(true, 'v1.37.2'))).toEqual(names(buildUnits));
    expect(
      selectedUnits(false, 'v1.34.4')
        .filter((u) => u.name === 'kubernetes')
        .map((u) => u.version),
    ).toEqual(['v1.34.4']);
  });
});

describe('switching versions', () => {
  it('lets up proceed on fresh state or state of the same version', () => {
    expect(() => checkStateVersion(undefined, 'v1.37.2')).not.toThrow();
    expect(() => checkStateVersion('v1.37.2', 'v1.37.2')).not.toThrow();
  });

  it('refuses to start one version on the state of another', () => {
    expect(() => checkStateVersion('v1.34.4', 'v1.37.2')).toThrow(/runs Kubernetes v1\.34\.4, not v1\.37\.2.*cluster:down/);
  });

  it('says in the status which version runs, and when the selection differs', () => {
    expect(kubernetesLine({ selected: 'v1.34.4' })).toBe('Kubernetes: none (no cluster state)');
    expect(kubernetesLine({ selected: 'v1.37.2', state: 'v1.37.2', apiserver: 'v1.37.2', kubelet: 'v1.37.2' })).toBe(
      'Kubernetes: v1.37.2; API server v1.37.2, kubelet v1.37.2',
    );
    expect(kubernetesLine({ selected: 'v1.34.4', state: 'v1.37.2' })).toMatch(
      /^Kubernetes: v1\.37\.2; recorded in the state directory; .*; PVX_KUBERNETES_VERSION selects v1\.34\.4: `cluster:down` before `cluster:up` to switch$/,
    );
  });
});
