// Node's floor under an idle `pvx run`: what a process costs that loads the same packages pvx runs on
// (pino, prom-client with its default metrics, croner, yaml, typebox), serves metrics and health as
// pvx does, and holds one watch open to the API server over TLS — and does nothing else. RSS above
// this is pvx's own part. Plain JavaScript, not TypeScript: Node's type stripper would add its own
// memory to the floor (bench/README.md, "Informer memory").
//
//   node bench/idle.ts --case 'pvx|--optimize-for-size' --case 'floor|--optimize-for-size|ENTRY=bench/node-floor.mjs' \
//     --case 'node|--optimize-for-size|ENTRY=bench/node-floor.mjs PVX_FLOOR_PACKAGES=0'
//
// It takes the arguments bench/idle.ts gives `pvx run` and reads only --kubeconfig (the stand-in's
// address, CA and token), --metrics-bind-address and --health-probe-bind-address.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { setTimeout } from 'node:timers';
import { URL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  args: process.argv.slice(3),
  options: {
    kubeconfig: { type: 'string' },
    'metrics-bind-address': { type: 'string' },
    'health-probe-bind-address': { type: 'string' },
  },
  strict: false,
});
// PVX_FLOOR_PACKAGES=0: Node alone (node:https, node:http), the packages left out.
const packages = process.env.PVX_FLOOR_PACKAGES !== '0';
const log = packages ? (await import('pino')).default({ level: 'warn' }) : { warn: () => undefined };
// Without prom-client, the three figures bench/idle.ts reads, from Node itself.
let metrics = async () => {
  const m = process.memoryUsage();
  return `nodejs_heap_size_used_bytes ${m.heapUsed}\nnodejs_heap_size_total_bytes ${m.heapTotal}\nnodejs_external_memory_bytes ${m.external}\n`;
};
if (packages) {
  // Loaded, and each used once as pvx uses it, then idle.
  const [{ Registry, collectDefaultMetrics }, { Cron }, { Type }] = await Promise.all([import('prom-client'), import('croner'), import('@sinclair/typebox')]);
  new Cron('0 0 * * *', { paused: true }).stop();
  Type.Object({ size: Type.String() });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  metrics = () => registry.metrics();
}
const config = packages
  ? (await import('yaml')).parse(readFileSync(String(values.kubeconfig), 'utf8'))
  : JSON.parse(readFileSync(String(values.kubeconfig), 'utf8'));
const cluster = config.clusters[0].cluster;
const token = config.users[0].user.token;
const server = new URL(cluster.server);

/** Holds one watch open, as an informer does, and opens it again when it ends. */
function watch() {
  const req = request(
    {
      host: server.hostname,
      port: server.port,
      path: '/api/v1/persistentvolumeclaims?watch=true&allowWatchBookmarks=true',
      ca: Buffer.from(cluster['certificate-authority-data'], 'base64'),
      headers: { authorization: `Bearer ${token}` },
    },
    (res) => {
      res.resume();
      res.on('end', () => setTimeout(watch, 1000));
    },
  );
  req.on('error', (err) => {
    log.warn({ err: err.message }, 'watch failed');
    setTimeout(watch, 1000);
  });
  req.end();
}
watch();

const listen = (address, handler) => {
  const [host, port] = String(address).split(':');
  createServer(handler).listen(Number(port), host);
};
listen(values['metrics-bind-address'], async (_req, res) => res.end(await metrics()));
listen(values['health-probe-bind-address'], (_req, res) => res.end('ok'));
