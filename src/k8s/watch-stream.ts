// A watch stream's body, one JSON event per line, read the way client-go reads it:
//
//   - lines are split in time linear in their length: a chunk is searched once, for its own
//     newlines, and a line's pieces are joined once, when it ends. (Appending each chunk to one
//     string and searching it from the start again costs the square of a line's length: one Pod
//     of a few MiB, arriving as 16 KiB TLS records, would hold the event loop for seconds.)
//   - a line may be at most 16 MiB, client-go's limit for one object in a stream; a longer one
//     ends the watch with an error as soon as more than that is held, rather than when it ends;
//   - a line that is not an event ends the watch with an error, as client-go's StreamWatcher does:
//     the informer resumes from the last resourceVersion it saw and so receives the change again,
//     where skipping the line would lose it until the next relist.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent, WatchEventType } from './client.ts';

/** client-go's limit on one object in a stream (apimachinery's streaming decoder, 16 MiB). */
export const maxWatchLineBytes = 16 * 1024 * 1024;

/** A watch stream pvx will not read on: a line too long, or one that is not an event. */
export class WatchStreamError extends Error {
  override name = 'WatchStreamError';
}

const eventTypes: ReadonlySet<string> = new Set<WatchEventType>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

/** Splits a byte stream into lines (without their newline), in linear time, each at most maxBytes. */
export class LineSplitter {
  readonly #maxBytes: number;
  /** The pieces of the line not yet ended, and their total length. */
  #pieces: Buffer[] = [];
  #held = 0;

  constructor(maxBytes = maxWatchLineBytes) {
    this.#maxBytes = maxBytes;
  }

  /** The lines this chunk ends, in order; throws WatchStreamError once a line passes maxBytes. */
  push(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    // A newline byte never occurs inside a multi-byte UTF-8 sequence: splitting bytes is safe.
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      this.#hold(nl - start);
      this.#pieces.push(chunk.subarray(start, nl));
      lines.push(this.#pieces.length === 1 ? (this.#pieces[0] as Buffer) : Buffer.concat(this.#pieces, this.#held));
      this.#pieces = [];
      this.#held = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.#hold(chunk.length - start);
      this.#pieces.push(chunk.subarray(start));
    }
    return lines;
  }

  /** What is left after the last newline (a stream may end without one). */
  rest(): Buffer {
    const rest = Buffer.concat(this.#pieces, this.#held);
    this.#pieces = [];
    this.#held = 0;
    return rest;
  }

  #hold(bytes: number): void {
    this.#held += bytes;
    if (this.#held > this.#maxBytes)
      throw new WatchStreamError(`a watch event longer than ${this.#maxBytes / 1024 / 1024} MiB (client-go's limit too): the watch is ended`);
  }
}

/**
 * The event of one line ({"type": …, "object": {…}}), undefined for a blank line; a
 * WatchStreamError naming the line (its number in the stream and its start) for anything else.
 */
export function parseWatchLine(line: string, lineNumber: number): WatchEvent | undefined {
  if (line.trim() === '') return undefined;
  let event: unknown;
  let why: string;
  try {
    event = JSON.parse(line);
    const { type, object } = (event ?? {}) as { type?: unknown; object?: unknown };
    if (typeof type === 'string' && eventTypes.has(type) && object !== null && typeof object === 'object' && !Array.isArray(object)) {
      return { type: type as WatchEventType, object: object as KubernetesObject };
    }
    why = typeof type === 'string' && !eventTypes.has(type) ? `unknown event type ${JSON.stringify(type.slice(0, 40))}` : 'no type and object';
  } catch (err) {
    why = (err as Error).message;
  }
  const excerpt = line.length > 120 ? `${line.slice(0, 120)}…` : line;
  throw new WatchStreamError(`watch line ${lineNumber} is not an event (${why}): ${excerpt}`);
}
