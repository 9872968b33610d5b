// An answer's body read up to a limit. A kubelet or a Prometheus is a peer pvx does not control:
// one that streams without end (broken, or hostile) must cost a bounded amount of memory, so the
// read stops, and the connection is closed, as soon as the body passes the limit rather than when
// it ends.
import { humanBytes } from '../k8s/quantity.ts';

/** A body longer than the reader's limit. */
export class BodyTooLarge extends Error {
  override name = 'BodyTooLarge';
  constructor(maxBytes: number) {
    super(`the answer is larger than ${humanBytes(BigInt(maxBytes))}; not read further`);
  }
}

/**
 * The body as text, read chunk by chunk from a Node stream or a fetch body; BodyTooLarge once it
 * passes maxBytes. Leaving the loop early destroys a Node stream and cancels a fetch body, which
 * closes the connection.
 */
export async function readBounded(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new BodyTooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}
