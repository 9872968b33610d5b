// What the tests' hostile peers (a fake API server, kubelet or Prometheus on 127.0.0.1) do to an
// answer, and how a test waits for what follows. Not shipped (src/k8s/testing/).
import type { ServerResponse } from 'node:http';

/** Writes `data` in pieces of `chunk` bytes, each once the socket has taken the one before, then ends the answer. */
export function writeInChunks(res: ServerResponse, data: Buffer, chunk: number): void {
  let at = 0;
  const next = () => {
    while (at < data.length) {
      const piece = data.subarray(at, at + chunk);
      at += piece.length;
      if (!res.write(piece)) return void res.once('drain', next);
    }
    res.end();
  };
  next();
}

/** How much an endless answer wrote, and whether the client closed it. */
export interface Endless {
  written: number;
  closed: boolean;
}

/**
 * Writes after `head` a body that never ends: 64 KiB pieces as fast as the socket takes them
 * ('flood'), or one byte every 20 ms ('trickle'). Bounded for the test's sake — 256 MiB or 20 s,
 * whichever comes first — after which the connection is cut.
 */
export function writeEndlessly(res: ServerResponse, head: string, mode: 'flood' | 'trickle'): Endless {
  const state: Endless = { written: 0, closed: false };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write(head);
  const piece = Buffer.alloc(64 * 1024, ' ');
  const stopAt = performance.now() + 20_000;
  const more = () => {
    if (res.destroyed || state.written > 256 * 1024 * 1024 || performance.now() > stopAt) return void res.destroy();
    if (mode === 'trickle') {
      res.write(' ');
      state.written += 1;
      return void setTimeout(more, 20);
    }
    state.written += piece.length;
    if (res.write(piece)) setImmediate(more);
    else res.once('drain', more);
  };
  res.on('close', () => (state.closed = true));
  more();
  return state;
}

/** Resolves once `cond` holds; fails after `ms` (5 s). */
export async function eventually(cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
