// Step-by-step progress for long operations: "[3/12] building … (1m05s)", with a heartbeat while
// a step runs so minutes of work never look like a hang.

export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
}

export interface StepContext {
  /** Replace the heartbeat's detail text (e.g. the last package compiled). */
  detail: (text: string) => void;
  /** Print a line under the current step. */
  log: (text: string) => void;
}

export class Progress {
  private index = 0;
  private readonly started = Date.now();
  private readonly total: number;
  private readonly out: (line: string) => void;
  private readonly heartbeatMs: number;

  constructor(total: number, out: (line: string) => void = (line) => void process.stderr.write(`${line}\n`), heartbeatMs = 15_000) {
    this.total = total;
    this.out = out;
    this.heartbeatMs = heartbeatMs;
  }

  async step<T>(title: string, run: (ctx: StepContext) => Promise<T>): Promise<T> {
    this.index += 1;
    const tag = `[${this.index}/${this.total}]`;
    const begun = Date.now();
    let detail = '';
    this.out(`${tag} ${title} …`);
    const timer = setInterval(() => {
      this.out(`${tag} … still ${title.toLowerCase()} (${formatDuration(Date.now() - begun)})${detail ? `: ${detail}` : ''}`);
    }, this.heartbeatMs);
    try {
      const result = await run({
        detail: (text) => {
          detail = text;
        },
        log: (text) => this.out(`${tag}   ${text}`),
      });
      this.out(`${tag} ${title}: done in ${formatDuration(Date.now() - begun)}`);
      return result;
    } catch (err) {
      this.out(`${tag} ${title}: FAILED after ${formatDuration(Date.now() - begun)}`);
      throw err;
    } finally {
      clearInterval(timer);
    }
  }

  elapsed(): string {
    return formatDuration(Date.now() - this.started);
  }
}
