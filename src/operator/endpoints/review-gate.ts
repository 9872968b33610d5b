// Who gets a token review when the metrics port is flooded. Anyone who reaches the port can send a
// new random token with every request, and each unknown token costs a TokenReview: unchecked, a
// flood of them queues the real scraper's review behind thousands of bogus ones (measured: 11.7 s
// after 600 requests, past Prometheus' 10 s scrape timeout) and spends the API server's capacity.
//
// So the reviews of tokens pvx has not seen allowed are admitted here, and refused at once rather
// than queued without end:
//
//   - one peer address may have `perPeer` such reviews waiting or under way (default 1); another
//     from it is refused with 429 — a flood from one address holds one place in the queue, so a
//     real scraper from another address waits behind at most one of its requests per flooding
//     address;
//   - reviews start at `qps` a second (burst `burst`): the cost to the API server is bounded
//     whatever the flood's rate;
//   - at most `maxQueued` wait, each at most `maxWaitMs`; beyond either, 503 with Retry-After;
//   - a request whose client has gone leaves the queue and costs no review;
//   - a token the cluster signed (a ServiceAccount's, checked in token-signature.ts) waits in a
//     lane of its own, served before the other: one per ServiceAccount waiting or under way, in
//     place of one per address. Made-up tokens, from however many addresses, fill the other lane
//     only, and a scraper pvx has never seen (after a restart, a failover) still goes first.
//
// Tokens allowed before (metrics-auth.ts keeps them) are never gated: a scraper pvx knows is
// reviewed at once when its cached verdict expires, whatever the flood. Pure but for the clock and
// the timer that wakes the queue.

export interface ReviewGateOptions {
  /** Reviews of unknown tokens started per second, sustained (> 0). Default 5. */
  qps?: number;
  /** Reviews that may start at once after a quiet spell (≥ 1). Default 10. */
  burst?: number;
  /** Unknown tokens waiting for their review at most, in each lane; more are refused with 503. Default 32. */
  maxQueued?: number;
  /** How long an unknown token waits for its review at most, ms; then 503. Default 2,000. */
  maxWaitMs?: number;
  /** Reviews one peer address, or one signed token's ServiceAccount, may have waiting or under way at once; more are refused with 429. Default 1. */
  perPeer?: number;
  /** Clock, ms; default performance.now. */
  now?: () => number;
}

/** Go ahead (and call done() when the review is over), or a refusal to answer with. */
export type Admission = { kind: 'admitted'; done: () => void } | { kind: 'refused'; status: 429 | 503; message: string };

interface Waiter {
  /** Whose place it holds: the peer address, or the signed token's ServiceAccount. */
  source: string;
  deadline: number;
  settle: (a: Admission) => void;
}

export class ReviewGate {
  readonly #o: Required<ReviewGateOptions>;
  #tokens: number;
  #last: number;
  /** Waiting: tokens the cluster signed, served first; every other token. */
  readonly #signed: Waiter[] = [];
  readonly #queue: Waiter[] = [];
  /** Reviews admitted or waiting, by source (a peer address, or a signed token's ServiceAccount). */
  readonly #perSource = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: ReviewGateOptions = {}) {
    this.#o = { qps: 5, burst: 10, maxQueued: 32, maxWaitMs: 2_000, perPeer: 1, now: () => performance.now(), ...opts };
    const { qps, burst, maxQueued, maxWaitMs, perPeer } = this.#o;
    if (!(qps > 0 && Number.isFinite(qps))) throw new TypeError(`qps must be a finite number above 0, got ${qps}`);
    for (const [name, v] of Object.entries({ burst, perPeer }))
      if (!(Number.isInteger(v) && v >= 1)) throw new TypeError(`${name} must be a whole number ≥ 1, got ${v}`);
    if (!(Number.isInteger(maxQueued) && maxQueued >= 0)) throw new TypeError(`maxQueued must be a whole number ≥ 0, got ${maxQueued}`);
    if (!(maxWaitMs >= 0 && Number.isFinite(maxWaitMs))) throw new TypeError(`maxWaitMs must be a finite number ≥ 0, got ${maxWaitMs}`);
    this.#tokens = burst;
    this.#last = this.#o.now();
  }

  /**
   * Waits for a review slot for a token from `peer`, or refuses; `signal` withdraws the request.
   * `signedBy` names the ServiceAccount of a token the cluster signed: it goes in the first lane.
   */
  admit(peer: string, signal?: AbortSignal, signedBy?: string): Promise<Admission> {
    if (signal?.aborted) return Promise.resolve({ kind: 'refused', status: 503, message: 'the token was not reviewed: the client went away' });
    const source = signedBy === undefined ? peer : `serviceaccount ${signedBy}`;
    if ((this.#perSource.get(source) ?? 0) >= this.#o.perPeer) {
      return Promise.resolve({
        kind: 'refused',
        status: 429,
        message: `a token ${signedBy === undefined ? `from ${peer}` : `of ${signedBy}`} is already being reviewed; retry in a second`,
      });
    }
    const lane = signedBy === undefined ? this.#queue : this.#signed;
    this.#take(source);
    if (this.#signed.length === 0 && lane.length === 0 && this.#spend()) return Promise.resolve(this.#admitted(source));
    if (lane.length >= this.#o.maxQueued) {
      this.#release(source);
      return Promise.resolve({
        kind: 'refused',
        status: 503,
        message: `too many ${signedBy === undefined ? 'unknown' : 'signed'} tokens are waiting for review (${this.#o.maxQueued}); retry in a second`,
      });
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        source,
        deadline: this.#o.now() + this.#o.maxWaitMs,
        settle: (a) => {
          signal?.removeEventListener('abort', withdraw);
          resolve(a);
        },
      };
      const withdraw = () => this.#drop(waiter, 'the client went away');
      signal?.addEventListener('abort', withdraw, { once: true });
      lane.push(waiter);
      this.#pump();
    });
  }

  /** Waiting requests now, both lanes (for tests and metrics). */
  get waiting(): number {
    return this.#signed.length + this.#queue.length;
  }

  /** Admits the heads of the lanes (signed first) while tokens last; refuses those past their wait; sleeps until the next token or deadline. */
  #pump(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = this.#o.now();
    for (const w of [...this.#signed, ...this.#queue]) if (now >= w.deadline) this.#drop(w, `no review slot within ${this.#o.maxWaitMs} ms`);
    while (this.waiting > 0 && this.#spend()) {
      const w = (this.#signed.shift() ?? this.#queue.shift()) as Waiter;
      w.settle(this.#admitted(w.source));
    }
    if (this.waiting === 0) return;
    const nextToken = ((1 - this.#tokens) * 1000) / this.#o.qps;
    const nextDeadline = Math.min(...[...this.#signed, ...this.#queue].map((w) => w.deadline)) - now;
    this.#timer = setTimeout(() => this.#pump(), Math.max(1, Math.min(nextToken, nextDeadline)));
    this.#timer.unref();
  }

  #drop(w: Waiter, why: string): void {
    const lane = this.#signed.includes(w) ? this.#signed : this.#queue;
    const i = lane.indexOf(w);
    if (i < 0) return;
    lane.splice(i, 1);
    this.#release(w.source);
    w.settle({ kind: 'refused', status: 503, message: `the token was not reviewed: ${why}; retry in a second` });
  }

  /** Takes a token if one is there (refilled at qps, up to burst). */
  #spend(): boolean {
    const now = this.#o.now();
    this.#tokens = Math.min(this.#o.burst, this.#tokens + ((now - this.#last) * this.#o.qps) / 1000);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  #admitted(source: string): Admission {
    let done = false;
    return {
      kind: 'admitted',
      done: () => {
        if (done) return;
        done = true;
        this.#release(source);
      },
    };
  }

  #take(source: string): void {
    this.#perSource.set(source, (this.#perSource.get(source) ?? 0) + 1);
  }

  #release(source: string): void {
    const n = (this.#perSource.get(source) ?? 1) - 1;
    if (n <= 0) this.#perSource.delete(source);
    else this.#perSource.set(source, n);
  }
}
