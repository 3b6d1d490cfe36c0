import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { bundled } from '../support/bundles.js';

/**
 * Drives one `crash-host.ts` process: answers `go` at every pause until the kill point, then
 * SIGKILLs it. A kill at a storage call lands wherever the host has got to when the signal arrives:
 * it keeps running meanwhile.
 */

export interface HostRun {
  sessionId: string;
  killed: boolean;
  /** The storage calls the host started once its session existed, in order, before it was killed or finished. */
  calls: string[];
}

/** When to kill: at a named pause (the n-th time the host reaches it), at the n-th storage call, or never. */
export type KillAt = { point: [string, number] } | { call: number } | 'never';

export function runHost(target: object, at: KillAt): Promise<HostRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundled('crash-host'), JSON.stringify(target)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const seen = new Map<string, number>();
    const run: HostRun = { sessionId: '', killed: false, calls: [] };
    const kill = () => {
      run.killed = true;
      child.kill('SIGKILL');
    };
    const onCall = (method: string) => {
      // Only the turn's calls count: before the session exists there is nothing to recover.
      if (!run.sessionId) return;
      run.calls.push(method);
      if (typeof at === 'object' && 'call' in at && run.calls.length === at.call) kill();
    };
    const onPoint = (name: string) => {
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      if (typeof at === 'object' && 'point' in at && name === at.point[0] && count === at.point[1]) kill();
      else child.stdin.write('go\n');
    };
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('SESSION ')) run.sessionId = line.slice(8);
      if (run.killed) return;
      if (line.startsWith('CALL ')) onCall(line.slice(5));
      if (line.startsWith('POINT ')) onPoint(line.slice(6));
    });
    // The host may be gone before its stdin is written to; the exit below says what happened.
    child.stdin.on('error', () => undefined);
    // 'close', not 'exit': by then every line the host printed has been read.
    child.on('close', (code, signal) => {
      run.killed = signal === 'SIGKILL';
      // A kill aimed at a storage call may find the host finished: it exited as the signal was on its way,
      // or this run made fewer calls than the one that counted them (trace writes are batched as time allows).
      const finished = code === 0 && (at === 'never' || 'call' in at);
      if (run.killed || finished) resolve(run);
      else reject(new Error(`host ended (${code ?? signal}) without being killed as planned`));
    });
  });
}
