// The embedded cluster's etcd, reached on loopback through its v3 HTTP gateway.
import { ports } from '../../cluster/layout.ts';

/** Compacts etcd's history up to its current revision: any older resourceVersion is then Gone (410). */
export async function compactEtcd(): Promise<number> {
  const base = `http://127.0.0.1:${ports.etcdClient}/v3`;
  const range = (await (await fetch(`${base}/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'AA==' }) })).json()) as { header: { revision: string } };
  const revision = Number(range.header.revision);
  const res = await fetch(`${base}/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: String(revision), physical: true }) });
  if (!res.ok) throw new Error(`etcd compaction failed: ${res.status} ${await res.text()}`);
  return revision;
}
