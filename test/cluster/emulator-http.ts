// What the cloud emulators (test/cluster/ec2, test/cluster/compute) share: an HTTP server on a
// loopback address whose handler's failures are answered 500 and logged, and the command line of
// their processes (--listen HOST:PORT, stopped by SIGTERM or SIGINT).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RunningServer {
  /** http://host:port */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves `handle` on host:port (port 0: any free one); `name` prefixes what a failing handler logs. */
export async function serve(
  name: string,
  where: { host: string; port: number },
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  onClose: () => void = () => {},
): Promise<RunningServer> {
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      process.stderr.write(`${name}: ${err instanceof Error ? err.stack : String(err)}\n`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where.port, where.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${where.host}:${port}`,
    port,
    close: () =>
      new Promise((resolve, reject) => {
        onClose();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** HOST:PORT of a --listen flag, or an error naming it. */
export function parseListen(listen: string): { host: string; port: number } {
  const separator = listen.lastIndexOf(':');
  const host = listen.slice(0, separator);
  const port = Number(listen.slice(separator + 1));
  if (separator < 0 || !host || !Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--listen ${listen}: expected HOST:PORT`);
  return { host, port };
}

/** Runs an emulator process's main: its server closed on SIGTERM or SIGINT, a start that fails reported as `name: message`, exit 1. */
export function runEmulatorProcess(name: string, main: () => Promise<RunningServer>): void {
  main().then(
    (server) => {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => {
          server.close().then(
            () => process.exit(0),
            () => process.exit(1),
          );
        });
      }
    },
    (err: unknown) => {
      process.stderr.write(`${name}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
