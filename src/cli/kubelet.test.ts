import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { V1Node } from '@kubernetes/client-node';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { HttpsKubeletClient } from '../usage/kubelet-client.ts';
import { ApiServerKubeletReader, commandKubeletReader, directKubeletWarning, kubeletFlags, kubeletTrust, kubeletWarnings } from './kubelet.ts';

describe('kubelet flags', () => {
  it('defaults: the cluster CA, certificates checked, InternalIP first', () => {
    expect(kubeletFlags({}, {})).toEqual({ insecureTLS: false, preferredAddressTypes: ['InternalIP', 'InternalDNS', 'Hostname', 'ExternalIP', 'ExternalDNS'] });
  });

  it('takes the environment when no flag is given, the flag over it', () => {
    const env = { PVX_KUBELET_CA_FILE: '/etc/ca.crt', PVX_KUBELET_PREFERRED_ADDRESS_TYPES: 'Hostname,InternalIP' };
    expect(kubeletFlags({}, env)).toEqual({ caFile: '/etc/ca.crt', insecureTLS: false, preferredAddressTypes: ['Hostname', 'InternalIP'] });
    expect(kubeletFlags({ 'kubelet-ca-file': '/other.crt' }, env).caFile).toBe('/other.crt');
    expect(kubeletFlags({}, { PVX_KUBELET_INSECURE_TLS: 'true' }).insecureTLS).toBe(true);
  });

  it.each([
    [{ 'kubelet-insecure-tls': true, 'kubelet-ca-file': '/ca.crt' }, {}, /--kubelet-insecure-tls and --kubelet-ca-file exclude each other/],
    [{ 'kubelet-preferred-address-types': 'InternalIP,PodIP' }, {}, /--kubelet-preferred-address-types: "PodIP" is not a node address type/],
    [{}, { PVX_KUBELET_INSECURE_TLS: 'yes' }, /PVX_KUBELET_INSECURE_TLS must be true or false, got "yes"/],
  ])('refuses %j %j', (values, env, message) => {
    expect(() => kubeletFlags(values, env)).toThrow(message);
  });
});

describe('kubeletTrust', () => {
  const flags = kubeletFlags({}, {});
  const access = { credentials: () => ({}), clusterCa: { pem: Buffer.from('CLUSTER'), source: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt' } };

  it('is the cluster CA by default, naming where it came from', () => {
    expect(kubeletTrust(flags, access)).toEqual({
      ca: Buffer.from('CLUSTER'),
      source: 'the cluster CA (/var/run/secrets/kubernetes.io/serviceaccount/ca.crt; another CA with --kubelet-ca-file)',
    });
  });

  it('is the CA file when one is given, and the system’s roots when no CA is known', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'pvx-ca-')), 'kubelet-ca.crt');
    writeFileSync(file, 'KUBELET-CA');
    expect(kubeletTrust({ ...flags, caFile: file }, access)).toEqual({ ca: Buffer.from('KUBELET-CA'), source: `the CA file ${file}` });
    expect(kubeletTrust(flags, { credentials: () => ({}) })).toMatchObject({ source: expect.stringMatching(/^the system's trusted CAs/) });
    expect(() => kubeletTrust({ ...flags, caFile: '/nonexistent/ca.crt' }, access)).toThrow(/--kubelet-ca-file \/nonexistent\/ca.crt cannot be read/);
  });

  it('checks nothing with the insecure opt-out', () => {
    expect(kubeletTrust({ ...flags, insecureTLS: true }, access)).toEqual({ insecure: true });
  });
});

// A person's command must not hand their credentials (an administrator's, an EKS token) to every
// node: it reads through the API server's node proxy, and only --kubelet-direct dials kubelets.
describe('a person’s command reads the kubelets through the API server unless told otherwise', () => {
  const node: V1Node = { metadata: { name: 'node-1' } };
  const summary = { pods: [] };
  function setup() {
    const fake = new FakeKubeClient();
    fake.summaries.set('node-1', summary);
    let sent = 0;
    const access = {
      credentials: () => {
        sent += 1;
        return { token: 'the-person’s-token' };
      },
    };
    return { fake, access, sentCredentials: () => sent };
  }

  it('by default: the node proxy, and no credentials taken for a kubelet', async () => {
    const { fake, access, sentCredentials } = setup();
    const reader = commandKubeletReader(kubeletFlags({}, {}, 'api-server-unless-direct'), { client: fake, kubelet: access });
    expect(reader).toBeInstanceOf(ApiServerKubeletReader);
    expect(await reader.statsSummary(node)).toEqual(summary);
    expect(fake.calls).toContain('nodeStatsSummary node-1');
    expect(sentCredentials()).toBe(0);
    expect(kubeletWarnings(kubeletFlags({}, {}, 'api-server-unless-direct'))).toEqual([]);
  });

  it('--kubelet-direct (or PVX_KUBELET_DIRECT=true) dials each kubelet, and says whose credentials go there', () => {
    const { fake, access } = setup();
    for (const flags of [
      kubeletFlags({ 'kubelet-direct': true }, {}, 'api-server-unless-direct'),
      kubeletFlags({}, { PVX_KUBELET_DIRECT: 'true' }, 'api-server-unless-direct'),
    ]) {
      expect(commandKubeletReader(flags, { client: fake, kubelet: access })).toBeInstanceOf(HttpsKubeletClient);
      expect(kubeletWarnings(flags)).toEqual([directKubeletWarning]);
    }
    // pvx run reads directly whatever the environment says: as its reader identity (kubelet-identity.ts).
    expect(kubeletFlags({}, { PVX_KUBELET_DIRECT: 'true' }).direct).toBeUndefined();
  });

  it('the flags of a direct read are refused without it: they would change nothing', () => {
    expect(() => kubeletFlags({ 'kubelet-ca-file': '/ca.crt' }, {}, 'api-server-unless-direct')).toThrow(/are for --kubelet-direct/);
    expect(kubeletFlags({ 'kubelet-ca-file': '/ca.crt', 'kubelet-direct': true }, {}, 'api-server-unless-direct').caFile).toBe('/ca.crt');
  });

  it('a person who may not use the node proxy is told what to ask for, and the ways around it', async () => {
    const { fake, access } = setup();
    fake.summaries.set('node-1', new ApiError(403, 'Forbidden', 'nodes "node-1" is forbidden: cannot get resource "nodes/proxy"'));
    const reader = commandKubeletReader(kubeletFlags({}, {}, 'api-server-unless-direct'), { client: fake, kubelet: access });
    await expect(reader.statsSummary(node)).rejects.toThrow(
      /^node node-1: not allowed to read its statistics through the API server \(get nodes\/proxy\): ask for it, read usage from Prometheus \(--usage prometheus\), or read the kubelets directly with --kubelet-direct$/,
    );
  });
});
