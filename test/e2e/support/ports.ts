// Loopback ports for servers the tests start (and for addresses nothing must answer on).
import { createServer } from 'node:net';

/** A port nothing listens on right now, on 127.0.0.1: one the system handed out and closed again. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
