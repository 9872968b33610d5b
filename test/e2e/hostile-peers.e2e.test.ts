// pvx's /metrics under a flood of made-up tokens, with the real API server reviewing them: `pvx run`
// as its own ServiceAccount (pvx-metrics-auth grants the reviews), a flooder on 64 addresses
// (127.0.1.1–64, as many pods) sending 100 scrapes a second with a new random token each for 10 s
// (1,000 in all, each given up after 15 s), and a real scraper on 127.0.0.3 scraping once a second
// with a token of a ServiceAccount bound to pvx-metrics-reader that pvx has never seen (the worst
// case: no verdict cached, as after a restart or a failover). One place in the review queue per
// address would let 64 flooders fill it (32): the scraper's token, which the cluster signed, goes
// first (token-signature.ts). The API server's audit log counts the TokenReviews pvx sent.
// Everything is on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floodAddresses, percentile, scrapeFlood, type ScrapeFloodResult } from '../../src/operator/endpoints/scrape-flood.testing.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents } from './support/audit-log.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { createNamespace, deleteNamespace } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';
import { mintScrapeToken, scrapeToken } from './support/scraper.ts';

const seconds = 10;
const rate = 100;
let pvx: PvxProcess | undefined;
let ns: string | undefined;

describe('/metrics under a flood of bogus tokens, reviewed by the real API server', () => {
  let result: ScrapeFloodResult;
  let reviews = 0;
  let realTokens: string[] = [];

  beforeAll(async () => {
    ns = await createNamespace('pvx-e2e-flood');
    pvx = startPvx('flood', ['--leader-elect=false', '--namespace', ns, '--usage-source', 'none'], await serviceAccountKubeconfig());
    await waitReady(pvx);
    await scrapeToken(); // the scraper's ServiceAccount and its binding
    realTokens = await Promise.all(Array.from({ length: seconds - 1 }, () => mintScrapeToken()));
    const from = auditLogEnd();
    result = await scrapeFlood({ port: pvx.port, bogusPerSecond: rate, seconds, realTokens, bogusFrom: floodAddresses(64) });
    reviews = readAuditEvents(from).filter(
      (e) => e.objectRef?.resource === 'tokenreviews' && e.user.username === `system:serviceaccount:${pvxNamespace}:pvx`,
    ).length;
    const statuses = new Map<number, number>();
    for (const b of result.bogus) statuses.set(b.status, (statuses.get(b.status) ?? 0) + 1);
    process.stderr.write(
      [
        `flood: ${result.bogus.length} bogus requests at ${rate}/s`,
        `real scrapes: ${result.real.map((r) => `${r.status} in ${Math.round(r.ms)} ms`).join(', ')}`,
        `bogus answers: ${[...statuses].map(([code, n]) => `${n} × ${code}`).join(', ')}; p50 ${Math.round(
          percentile(
            result.bogus.map((b) => b.ms),
            0.5,
          ),
        )} ms, p99 ${Math.round(
          percentile(
            result.bogus.map((b) => b.ms),
            0.99,
          ),
        )} ms`,
        `sent twice (the kept-alive connection closed under the first): ${result.bogus.filter((b) => b.retried).length}`,
        `TokenReviews sent by pvx: ${reviews} (${((reviews - result.real.length) / result.bogus.length).toFixed(3)} per bogus request)`,
      ].join('\n') + '\n',
    );
  }, 180_000);

  afterAll(async () => {
    if (pvx) await stopPvx(pvx);
    if (ns) await deleteNamespace(ns);
  });

  it('answers every real scrape with metrics, each within a second, while the flood fills the review queue', () => {
    expect(result.bogus.filter((b) => b.status === 503).length).toBeGreaterThan(0);
    expect(result.real.map((r) => r.status)).toEqual(realTokens.map(() => 200));
    expect(Math.max(...result.real.map((r) => r.ms))).toBeLessThan(1_000);
  });

  it('read the cluster’s token signing keys (what puts the scraper first), as its own ServiceAccount', () => {
    expect(pvx?.logTail(10_000)).not.toContain("could not read the cluster's token signing keys");
  });

  it('refuses every bogus scrape quickly (401, 429 or 503), none left waiting', () => {
    expect(result.bogus.filter((b) => ![401, 429, 503].includes(b.status)).map((b) => b.status)).toEqual([]);
    expect(
      percentile(
        result.bogus.map((b) => b.ms),
        0.99,
      ),
    ).toBeLessThan(2_500);
  });

  it.runIf(apiserverAudits())('sends the API server a bounded number of TokenReviews, whatever the flood (5 a second, burst 10)', () => {
    expect(reviews - result.real.length).toBeLessThanOrEqual(10 + 5 * (seconds + 2));
    expect(reviews).toBeGreaterThanOrEqual(result.real.length);
  });
});
