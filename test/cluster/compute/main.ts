// The Compute Engine emulator: a process that answers the Compute Engine REST calls the GCE PD CSI
// driver's controller (sigs.k8s.io/gcp-compute-persistent-disk-csi-driver v1.28.1,
// pkg/gce-cloud-provider/compute/gce-compute.go) makes, for the embedded test cluster. The driver
// runs with --compute-endpoint=http://127.0.0.1:<port> (it appends compute/v1/ and compute/beta/),
// a cloud config naming the project and zone (so it asks no metadata server), and service-account
// credentials whose token_uri is this process's /token.
//
//   node test/cluster/compute/main.ts --listen 127.0.0.1:PORT --state-dir DIR --project ID
//
// Served, under /compute/v1/ and /compute/beta/ alike: zones list/get; disks insert, get, list,
// resize, update (PATCH with its `paths` field mask: sizeGb, provisionedIops,
// provisionedThroughput, accessMode) and delete; zoneOperations wait/get (operations finish at
// once). Any other path is a 404 naming it, so a call the driver makes that is not emulated shows
// in the call log. Requests need a Bearer token (any).
//
// Rules (disks.ts): sizes per disk type, no shrinking, IOPS and throughput changes only for
// Hyperdisk, at most one such change per disk in 4 hours (settable).
//
// Files in DIR: state.json (the disks, so a restart keeps them), calls.jsonl (one JSON line per
// call: time, method, call, disk, body, paths, httpStatus, result, message),
// images/projects/P/zones/Z/disks/NAME.img (each disk's data as a sparse file of its size: the path
// of its CSI volume handle, which the node half mounts).
//
// Admin endpoints: GET /_emulator/healthz ("ok"), /_emulator/calls (?call=disks.resize keeps one
// call), /_emulator/disks, /_emulator/config; POST /_emulator/config with a JSON object of
// performanceChangesPerWindow, performanceWindowSeconds and faults ([{call, disk?, times | seconds,
// operationError: {code, message} | httpError: {status, reason, message}}]: the next `times`
// matching calls, or every one for `seconds`, fail so).
import { parseArgs } from 'node:util';
import { parseListen, runEmulatorProcess } from '../emulator-http.ts';
import { startComputeEmulator } from './server.ts';

runEmulatorProcess('compute emulator', async () => {
  const { values } = parseArgs({ options: { listen: { type: 'string' }, 'state-dir': { type: 'string' }, project: { type: 'string' } }, strict: true });
  const { listen, 'state-dir': stateDir, project } = values;
  if (!listen || !stateDir || !project) throw new Error('usage: node test/cluster/compute/main.ts --listen HOST:PORT --state-dir DIR --project ID');
  const emulator = await startComputeEmulator({ ...parseListen(listen), stateDir, project });
  process.stdout.write(`compute emulator listening on ${emulator.url}, project ${project}, state in ${stateDir}\n`);
  return emulator;
});
