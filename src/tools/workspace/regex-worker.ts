import { Worker } from 'node:worker_threads';

/**
 * The matching loop, run in a worker thread: a regular expression that backtracks catastrophically
 * cannot be interrupted on the thread that runs it, and on the runtime's thread it would freeze
 * every session. In a worker it can be terminated at a deadline. Plain CommonJS, as eval workers run.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const pattern = new RegExp(workerData.source);
parentPort.on('message', (lines) => {
  const hits = [];
  for (let i = 0; i < lines.length; i++) if (pattern.test(lines[i])) hits.push(i);
  parentPort.postMessage(hits);
});
`;

export type MatchOutcome = { kind: 'hits'; lines: number[] } | { kind: 'timeout' } | { kind: 'aborted' };

/** One grep's matcher: lines in, indices of matching lines out, one batch at a time. */
export class RegexMatcher {
  private readonly worker: Worker;
  private settle: ((outcome: MatchOutcome | Error) => void) | null = null;

  /** `source` must already compile (the caller reports a bad pattern before starting a worker). */
  constructor(source: string) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { source } });
    this.worker.on('message', (lines: number[]) => this.settle?.({ kind: 'hits', lines }));
    this.worker.on('error', (error) => this.settle?.(error));
    this.worker.on('exit', (code) => this.settle?.(new Error(`the grep worker exited (code ${code})`)));
  }

  /** The indices of `lines` that match, unless `deadline` (epoch ms) passes or `signal` aborts first. */
  match(lines: string[], deadline: number, signal: AbortSignal): Promise<MatchOutcome> {
    return new Promise((resolve, reject) => {
      const finish = (outcome: MatchOutcome | Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.settle = null;
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onAbort = () => finish({ kind: 'aborted' });
      const timer = setTimeout(() => finish({ kind: 'timeout' }), Math.max(0, deadline - Date.now()));
      signal.addEventListener('abort', onAbort, { once: true });
      this.settle = finish;
      if (signal.aborted) onAbort();
      else this.worker.postMessage(lines);
    });
  }

  /** Ends the worker, mid-match if need be. */
  async close(): Promise<void> {
    this.settle = null;
    await this.worker.terminate();
  }
}
