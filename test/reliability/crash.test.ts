import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, INTERRUPTED_RESULT_TEXT, postgresStorage, scriptedModel } from '../../src/index.js';
import { dropPostgresSchema, POSTGRES_URL, sqliteFile } from '../support/databases.js';

/**
 * Issue 4, item 4: a host process is SIGKILLed at chosen points of a turn, and at storage calls drawn
 * at random, then a new runtime starts on the same database. Nothing may stay `running`, nothing stored before the kill may be lost or
 * duplicated, every stored call has its result or gets the synthesized one, no side effect is retried,
 * and the session takes a new turn.
 */

const HOST = join(import.meta.dirname, 'crash-host.ts');
const REPEATS = 4;
/** Where to kill: a point and which of its occurrences in the turn. */
const KILL_POINTS: [string, number][] = [
  ['model-stream', 1],
  ['after-assistant-write', 1],
  ['inside-tool', 1],
  ['after-result-write', 1],
  ['after-assistant-write', 2],
  ['waiting-approval', 1],
  ['after-result-write', 2],
];

interface HostRun {
  sessionId: string;
  killed: boolean;
  /** Storage calls the host started, once its session existed, before it was killed or finished. */
  calls: number;
}

/** When to kill: at a named pause (the n-th time the host reaches it), at the n-th storage call, or never. */
type KillAt = { point: [string, number] } | { call: number } | 'never';

/**
 * Runs the host and answers `go` at every pause until the kill point, then SIGKILLs it. A kill at a
 * storage call lands wherever the host has got to when the signal arrives: it keeps running.
 */
function runHost(target: object, at: KillAt): Promise<HostRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', HOST, JSON.stringify(target)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const seen = new Map<string, number>();
    const run: HostRun = { sessionId: '', killed: false, calls: 0 };
    const kill = () => {
      run.killed = true;
      child.kill('SIGKILL');
    };
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('SESSION ')) run.sessionId = line.slice(8);
      if (run.killed) return;
      if (line.startsWith('CALL ')) {
        // Only the turn's calls count: before the session exists there is nothing to recover.
        if (!run.sessionId) return;
        run.calls += 1;
        if (typeof at === 'object' && 'call' in at && run.calls === at.call) kill();
        return;
      }
      if (!line.startsWith('POINT ')) return;
      const name = line.slice(6);
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      if (typeof at === 'object' && 'point' in at && name === at.point[0] && count === at.point[1]) kill();
      else child.stdin.write('go\n');
    });
    child.on('exit', (code, signal) => {
      // A kill drawn at the turn's last call may find the host already gone, having finished cleanly.
      const finishedFirst = run.killed && 'call' in (at as object) && code === 0;
      run.killed = signal === 'SIGKILL';
      if (run.killed || finishedFirst || (at === 'never' && code === 0)) resolve(run);
      else reject(new Error(`host ended (${code ?? signal}) without being killed as planned`));
    });
  });
}

const dialects = [
  { name: 'sqlite', skip: false },
  { name: 'postgres', skip: !POSTGRES_URL },
];

const counts = new Map<string, number>();
afterAll(() => {
  console.log(`crash kill points: ${[...counts].map(([k, n]) => `${k} ${n}`).join(', ')} — ${[...counts.values()].reduce((a, b) => a + b, 0)} in all`);
});

/** A database and an effects log for one host run, and how to open and drop them. */
function workspace(dialect: string) {
  const effects = join(tmpdir(), `turnchart-effects-${randomUUID()}`);
  writeFileSync(effects, '');
  const file = dialect === 'sqlite' ? sqliteFile() : null;
  const schema = `tc_crash_${randomUUID().replaceAll('-', '')}`;
  return {
    effects,
    target: file ? { sqlite: file.file, effects } : { postgres: POSTGRES_URL, schema, effects },
    open: () => (file ? file.open() : createStorage(schema)),
    drop: () => (file ? file.drop() : dropPostgresSchema(POSTGRES_URL!, schema)),
  };
}

/** Kills one host as planned, restarts on the same database and checks what a crash must not break. */
async function killAndRecover(dialect: string, at: KillAt): Promise<HostRun> {
  const ws = workspace(dialect);
  try {
    const run = await runHost(ws.target, at);
    await expectRecovery(ws, run.sessionId);
    return run;
  } finally {
    await ws.drop();
  }
}

async function expectRecovery(ws: ReturnType<typeof workspace>, sessionId: string): Promise<void> {
  const effectsAtKill = readFileSync(ws.effects, 'utf8');
  const before = ws.open();
  await before.migrate();
  const storedAtKill = await before.listMessages(sessionId);
  await before.close();

  const model = scriptedModel([{ text: 'recovered' }]);
  const storage = ws.open();
  const runtime = await createRuntime({ storage, model });
  try {
    expect((await storage.listTurns(sessionId)).some((t) => t.status === 'running')).toBe(false);
    expect((await storage.listSpans(sessionId)).some((s) => s.status === 'running')).toBe(false);
    expect(await storage.listMessages(sessionId)).toEqual(storedAtKill);

    const session = await runtime.openSession(sessionId);
    const started = await session.startTurn({ clientRequestId: 'after-crash', input: [{ type: 'text', text: 'what happened?' }] });
    expect(started.ok).toBe(true);
    expect(await session.waitForTurn(started.ok ? started.turnId : '')).toEqual({ status: 'completed', finalText: 'recovered' });

    const results = new Set(storedAtKill.flatMap((m) => (m.message.role === 'tool' ? [m.message.toolCallId] : [])));
    const calls = storedAtKill.flatMap((m) => (m.message.role === 'assistant' ? m.message.toolCalls : []));
    const request = model.requests[0]!;
    for (const call of calls) {
      const sent = request.messages.find((m) => m.role === 'tool' && m.toolCallId === call.id);
      expect(sent).toBeDefined();
      if (!results.has(call.id)) expect(sent).toMatchObject({ status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
    }
    // Nothing was retried: the side effects are exactly those that happened before the kill.
    expect(readFileSync(ws.effects, 'utf8')).toBe(effectsAtKill);
    const after = await storage.listMessages(sessionId);
    expect(after.slice(0, storedAtKill.length)).toEqual(storedAtKill);
    expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
  } finally {
    await runtime.shutdown();
  }
}

/** Kills at storage calls drawn at random (seeded, so a failure replays): anywhere in the turn, mid-write included. */
const RANDOM_KILLS = 6;
const RANDOM_SEED = 20261130;

describe.each(dialects)('SIGKILL during a turn, then restart, on $name', ({ name, skip }) => {
  it.skipIf(skip).each(KILL_POINTS.flatMap((p) => Array.from({ length: REPEATS }, (_, i) => [`${p[0]}#${p[1]}`, i, p] as const)))(
    'killed at %s (run %i)',
    async (label, _run, point) => {
      const run = await killAndRecover(name, { point });
      expect(run.killed).toBe(true);
      counts.set(`${name}:${label}`, (counts.get(`${name}:${label}`) ?? 0) + 1);
    },
  );

  it.skipIf(skip)(`killed at ${RANDOM_KILLS} storage calls drawn at random (seed ${RANDOM_SEED})`, async () => {
    // One undisturbed run counts the storage calls of the turn; the kills are drawn from those.
    const ws = workspace(name);
    const { calls } = await runHost(ws.target, 'never').finally(() => ws.drop());
    const drawn = fc.sample(fc.integer({ min: 1, max: calls }), { seed: RANDOM_SEED, numRuns: RANDOM_KILLS });
    for (const call of drawn) {
      const run = await killAndRecover(name, { call });
      if (run.killed) counts.set(`${name}:random-call`, (counts.get(`${name}:random-call`) ?? 0) + 1);
    }
    console.log(`${name}: the turn makes ${calls} storage calls; killed at calls ${drawn.join(', ')}`);
  }, 120_000);
});

function createStorage(schema: string) {
  return postgresStorage({ connectionString: POSTGRES_URL!, schema });
}
