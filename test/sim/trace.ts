// What happened in a run, in order, stamped with simulated time: the user's actions, the faults,
// the writes the API server accepted, request phase changes and violations. The same seed must
// give the same trace (a test compares two runs); a failing seed prints its last relevant lines.

export type TraceKind = 'action' | 'fault' | 'write' | 'phase' | 'actor' | 'process' | 'violation' | 'note';

export interface TraceEntry {
  /** Simulated ms since the run started (monotonic; wall-clock steps do not move it). */
  at: number;
  kind: TraceKind;
  text: string;
}

export class Trace {
  readonly entries: TraceEntry[] = [];
  /** Faults injected, by kind, for the summary. */
  readonly faults = new Map<string, number>();
  private hash = 0x811c9dc5;

  private now: () => number;
  /** Keep every entry (for --trace and the determinism test); otherwise only the last `tail`. */
  private readonly keepAll: boolean;
  private readonly tail: number;

  constructor(now: () => number, keepAll = false, tail = 400) {
    this.now = now;
    this.keepAll = keepAll;
    this.tail = tail;
  }

  add(kind: TraceKind, text: string): void {
    const entry = { at: this.now(), kind, text };
    this.entries.push(entry);
    if (!this.keepAll && this.entries.length > this.tail * 2) this.entries.splice(0, this.entries.length - this.tail);
    // FNV-1a over every entry: two runs of a seed agree iff their full traces do.
    const line = `${entry.at} ${kind} ${text}\n`;
    for (let i = 0; i < line.length; i++) this.hash = Math.imul(this.hash ^ line.charCodeAt(i), 0x01000193) >>> 0;
  }

  /**
   * The run is over: the trace stops reading its clock. A failing seed's result (and so its trace)
   * is kept by the batch, and the clock is a closure over the whole run (API server, processes).
   */
  end(): void {
    const at = this.now();
    this.now = () => at;
  }

  fault(kind: string, text: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
    this.add('fault', `${kind}: ${text}`);
  }

  /** A fingerprint of the whole trace. */
  get digest(): string {
    return this.hash.toString(16).padStart(8, '0');
  }

  /** The last `count` entries, formatted one per line. */
  last(count: number): string[] {
    return this.entries.slice(-count).map(formatEntry);
  }
}

export function formatEntry(e: TraceEntry): string {
  const s = e.at / 1000;
  const clock = `${String(Math.floor(s / 3600)).padStart(2, '0')}:${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}:${(s % 60).toFixed(3).padStart(6, '0')}`;
  return `${clock} ${e.kind.padEnd(9)} ${e.text}`;
}
