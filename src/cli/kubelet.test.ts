import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kubeletFlags, kubeletTrust } from './kubelet.ts';

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
