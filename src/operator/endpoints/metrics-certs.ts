// Where /metrics' TLS certificate comes from: a directory holding tls.crt and tls.key (the layout
// of a kubernetes.io/tls Secret, as cert-manager writes it), or, when none is given, a self-signed
// certificate made in memory at start (kubebuilder's scaffold without cert-manager). Scrapers of a
// self-signed certificate skip verification (the ServiceMonitor's insecureSkipVerify): the token
// review, not the certificate, decides who reads the metrics.
//
// Either source is asked again at an interval (metrics-server.ts): a mounted Secret that cert-manager
// renews is served from the next connection on, without a restart.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { selfSignedCertificate, type CertificatePair } from './x509.ts';

export interface CertificateSource {
  /** Where the certificate comes from, for logs. */
  readonly description: string;
  /**
   * The certificate and key when they differ from the ones this source last returned (the first
   * call always returns them), else undefined. Throws when they cannot be read.
   */
  next(now: Date): CertificatePair | undefined;
}

/** tls.crt and tls.key of dir, read at each call (two small files) and returned when their bytes changed. */
export function certificateDirectory(dir: string): CertificateSource {
  let last: CertificatePair | undefined;
  return {
    description: `${join(dir, 'tls.crt')} and tls.key`,
    next() {
      const pair = { cert: readFileSync(join(dir, 'tls.crt'), 'utf8'), key: readFileSync(join(dir, 'tls.key'), 'utf8') };
      if (last && pair.cert === last.cert && pair.key === last.key) return undefined;
      last = pair;
      return pair;
    },
  };
}

const day = 86_400_000;

/** The Service in front of /metrics: its DNS names go into the self-signed certificate. */
export interface MetricsService {
  name: string;
  namespace: string;
}

/** The names a Service answers to inside the cluster (cert-manager's usual list for one). */
export const serviceDnsNames = (s: MetricsService): string[] => [
  s.name,
  `${s.name}.${s.namespace}`,
  `${s.name}.${s.namespace}.svc`,
  `${s.name}.${s.namespace}.svc.cluster.local`,
];

/**
 * A self-signed certificate for the metrics Service's DNS names (in a cluster), localhost,
 * 127.0.0.1, ::1 and this host's name (the pod's), valid a year from an hour ago (a scraper's
 * clock a little behind still accepts it), and made again 30 days before it ends: a pod that runs
 * for a year keeps a valid certificate.
 */
export function selfSignedSource(opts: { validityMs?: number; renewBeforeMs?: number; service?: MetricsService } = {}): CertificateSource {
  const validityMs = opts.validityMs ?? 365 * day;
  const renewBeforeMs = opts.renewBeforeMs ?? 30 * day;
  let notAfter = -Infinity;
  return {
    description: 'a self-signed certificate made at start',
    next(now) {
      if (now.getTime() < notAfter - renewBeforeMs) return undefined;
      const notBefore = new Date(now.getTime() - 3_600_000);
      notAfter = notBefore.getTime() + validityMs;
      const dnsNames = [...new Set([...(opts.service ? serviceDnsNames(opts.service) : []), 'localhost', hostname()])];
      return selfSignedCertificate({
        commonName: opts.service?.name ?? 'pvx-metrics',
        dnsNames,
        ipAddresses: ['127.0.0.1', '::1'],
        notBefore,
        notAfter: new Date(notAfter),
      });
    },
  };
}
