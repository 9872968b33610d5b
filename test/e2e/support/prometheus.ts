// Runs Debian's Prometheus server for e2e tests, on loopback, with a config the test gives, and
// reads its HTTP API. Stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from './kube.ts';
import { e2eLogDir } from './pvx-process.ts';
import { freePort } from './ports.ts';

const prometheusBin = '/usr/bin/prometheus';

export interface PrometheusServer {
  url: string;
  child: ChildProcess;
  /** Its config, data and any files the test adds (rule files). */
  dir: string;
  logFile: string;
  /** GET an API path; throws unless Prometheus answers status "success". */
  api<T>(path: string): Promise<T>;
  /** An instant query's result vector. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
}

/**
 * Starts Prometheus with `config` (prometheus.yml as an object); `files` are written next to it
 * first (rule files, by name), so the config can refer to them by their path under `dir`.
 */
export async function startPrometheus(name: string, config: (dir: string) => object, files: Record<string, string> = {}): Promise<PrometheusServer> {
  if (!existsSync(prometheusBin)) {
    throw new Error(
      `${prometheusBin} is missing: install Debian's prometheus package (apt-get install prometheus; \`npm run cluster:up\` installs it with the cluster's packages)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), `pvx-prometheus-${name}-`));
  for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content);
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, stringify(config(dir)));
  const listen = `127.0.0.1:${await freePort()}`;
  mkdirSync(e2eLogDir, { recursive: true });
  const logFile = join(e2eLogDir, `prometheus-${name}-${Date.now()}.log`);
  const log = openSync(logFile, 'a');
  const child = spawn(prometheusBin, [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=${listen}`], {
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const url = `http://${listen}`;
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const server: PrometheusServer = {
    url,
    child,
    dir,
    logFile,
    api,
    query: async (promql) =>
      (await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`)).result,
  };
  // A config Prometheus refuses ends the process at once: report that instead of waiting out the timeout.
  const exitedEarly = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`Prometheus exited with ${code}; its log: ${logFile}`))));
  // It also rejects when the test stops Prometheus later: nobody waits for it then.
  exitedEarly.catch(() => undefined);
  try {
    await Promise.race([
      waitFor('Prometheus to be ready', 60_000, async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok === true),
      exitedEarly,
    ]);
  } catch (err) {
    await stopPrometheus(server);
    throw err;
  }
  return server;
}

export async function stopPrometheus(p: PrometheusServer): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
