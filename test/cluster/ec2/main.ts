// The EC2 emulator: a process that answers the Amazon EC2 API calls the AWS EBS CSI driver's
// controller (aws-ebs-csi-driver v1.63.0, pkg/cloud/cloud.go) makes, for the embedded test
// cluster. The driver runs with AWS_REGION=us-east-1, dummy credentials and
// AWS_EC2_ENDPOINT=http://127.0.0.1:<port>.
//
//   node test/cluster/ec2/main.ts --listen 127.0.0.1:PORT --state-dir DIR
//       [--creating-seconds N]             CreateVolume: `creating` this long, then `available` (default 1)
//       [--modifying-seconds N]            ModifyVolume: `modifying` this long (default 3) …
//       [--optimizing-seconds N]           … then `optimizing` this long, then `completed` (default 10)
//       [--modification-window-seconds N]  the rate limit's rolling window (default 86400) …
//       [--modifications-per-window N]     … and how many modifications per volume it allows (default 4)
//
// DIR/config.json, when present, overrides those flags with the same settings in camelCase
// (e.g. {"modifyingSeconds": 0, "modificationsPerWindow": 2}). Tests may rewrite it while the
// emulator runs: it is re-read on the next call after it changes; durations apply to volumes
// created and modifications started from then on, the rate limit to the next ModifyVolume. A
// file that does not parse is reported on stderr and leaves the previous settings.
//
// Files in DIR (state-dir.ts): state.json (volumes and modification history, so a restart keeps
// them), calls.jsonl (one JSON line per EC2 call: time, requestId, action, volumeIds, params,
// httpStatus, result "ok" or the error code, message), volumes/<volume-id>.img (a sparse file of
// the volume's usable size, created by CreateVolume, grown by ftruncate when a modification
// reaches `optimizing`, removed by DeleteVolume; ext4 holds no file past 16 TiB, so a larger
// volume's file stays smaller, which stderr and /_emulator/volumes report).
//
// Admin endpoints (GET, JSON unless said):
//   /_emulator/healthz   "ok" (text)
//   /_emulator/calls     the call log; ?action=ModifyVolume keeps one action's calls
//   /_emulator/volumes   each volume as DescribeVolumes sees it now, its latest modification,
//                        its backing file, that file's size, and why it could not grow, if so
//   /_emulator/config    the timing in force
//
// EC2 query protocol (query.ts), any other path, POST form or GET query: a request needs an
// Authorization header (signatures are not checked). Emulated actions: DescribeAvailabilityZones
// (us-east-1a/b/c, DryRun), CreateVolume (Size, VolumeType, Iops, Throughput, AvailabilityZone or
// AvailabilityZoneId, Encrypted, KmsKeyId, MultiAttachEnabled, TagSpecification, ClientToken,
// DryRun), DescribeVolumes (VolumeId.N; filters tag:KEY, tag-key, volume-id, status, volume-type,
// size, availability-zone, encrypted; MaxResults/NextToken), DeleteVolume, CreateTags, DeleteTags,
// ModifyVolume (Size, VolumeType, Iops, Throughput, DryRun) and DescribeVolumesModifications
// (VolumeId.N; filters volume-id, modification-state, original-/target-size, -volume-type, -iops;
// paging). Attachments, snapshots and instances answer UnsupportedOperation, other actions
// InvalidAction.
//
// The EBS rules, each with the Amazon documentation or EC2 answer it follows, are in ebs.ts:
// sizes per type (API_CreateVolume / API_ModifyVolume: gp2 1–16,384 GiB, gp3 1–65,536, io1
// 4–16,384, io2 4–65,536, st1 and sc1 125–16,384, standard 1–1,024), IOPS and throughput limits,
// no shrinking, one modification at a time (IncorrectModificationState until the latest is
// `completed`), at most four modifications per volume in a rolling 24 hours
// (VolumeModificationRateExceeded), the new size in use from `optimizing` on
// (https://docs.aws.amazon.com/ebs/latest/userguide/monitoring-volume-modifications.html).
import { parseArgs } from 'node:util';
import { defaultTiming, type Timing } from './ebs.ts';
import { parseListen, runEmulatorProcess } from '../emulator-http.ts';
import { startEmulator } from './server.ts';
import { parseTimingOverrides } from './state-dir.ts';

const timingFlags: Record<string, keyof Timing> = {
  'creating-seconds': 'creatingSeconds',
  'modifying-seconds': 'modifyingSeconds',
  'optimizing-seconds': 'optimizingSeconds',
  'modification-window-seconds': 'modificationWindowSeconds',
  'modifications-per-window': 'modificationsPerWindow',
};

runEmulatorProcess('ec2 emulator', async () => {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string' },
      'state-dir': { type: 'string' },
      ...Object.fromEntries(Object.keys(timingFlags).map((flag) => [flag, { type: 'string' as const }])),
    },
    strict: true,
  });
  const listen = values.listen;
  const stateDir = values['state-dir'];
  if (!listen || !stateDir) throw new Error('usage: node test/cluster/ec2/main.ts --listen HOST:PORT --state-dir DIR [timing flags, see main.ts]');

  const timing: Timing = { ...defaultTiming };
  for (const [flag, key] of Object.entries(timingFlags)) {
    const value = (values as Record<string, string | undefined>)[flag];
    if (typeof value === 'string') Object.assign(timing, parseTimingOverrides({ [key]: Number(value) }, `--${flag}`));
  }

  const emulator = await startEmulator({ ...parseListen(listen), stateDir, timing });
  process.stdout.write(`ec2 emulator listening on ${emulator.url}, state in ${stateDir}\n`);
  return emulator;
});
