import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, INTERRUPTED_RESULT_TEXT, postgresStorage, scriptedModel } from '../../src/index.js';
import { dropPostgresSchema, POSTGRES_URL, sqliteFile } from '../support/databases.js';

/**
 * Issue 4, item 4: a host process is SIGKILLed at chosen points of a turn, then a new runtime starts on
 * the same database. Nothing may stay `running`, nothing stored before the kill may be lost or
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

interface Killed {
  sessionId: string;
}

/** Runs the host, answers `go` until the chosen point, then SIGKILLs it there. */
function runAndKill(target: object, point: [string, number]): Promise<Killed> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', HOST, JSON.stringify(target)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const seen = new Map<string, number>();
    let sessionId = '';
    let killed = false;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('SESSION ')) sessionId = line.slice(8);
      if (!line.startsWith('POINT ') || killed) return;
      const name = line.slice(6);
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      if (name === point[0] && count === point[1]) {
        killed = true;
        child.kill('SIGKILL');
      } else child.stdin.write('go\n');
    });
    child.on('exit', (_code, signal) => (killed && signal === 'SIGKILL' ? resolve({ sessionId }) : reject(new Error(`host ended without being killed at ${point.join('#')}`))));
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

describe.each(dialects)('SIGKILL during a turn, then restart, on $name', ({ name, skip }) => {
  it.skipIf(skip).each(KILL_POINTS.flatMap((p) => Array.from({ length: REPEATS }, (_, i) => [`${p[0]}#${p[1]}`, i, p] as const)))(
    'killed at %s (run %i)',
    async (label, _run, point) => {
      const effects = join(tmpdir(), `turnchart-effects-${randomUUID()}`);
      writeFileSync(effects, '');
      const file = name === 'sqlite' ? sqliteFile() : null;
      const schema = `tc_crash_${randomUUID().replaceAll('-', '')}`;
      const target = file ? { sqlite: file.file, effects } : { postgres: POSTGRES_URL, schema, effects };
      const open = () => (file ? file.open() : createStorage(schema));
      try {
        const { sessionId } = await runAndKill(target, point);
        counts.set(`${name}:${label}`, (counts.get(`${name}:${label}`) ?? 0) + 1);
        const effectsAtKill = readFileSync(effects, 'utf8');

        const before = open();
        await before.migrate();
        const storedAtKill = await before.listMessages(sessionId);
        await before.close();

        const model = scriptedModel([{ text: 'recovered' }]);
        const storage = open();
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
          expect(readFileSync(effects, 'utf8')).toBe(effectsAtKill);
          const after = await storage.listMessages(sessionId);
          expect(after.slice(0, storedAtKill.length)).toEqual(storedAtKill);
          expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
        } finally {
          await runtime.shutdown();
        }
      } finally {
        if (file) await file.drop();
        else await dropPostgresSchema(POSTGRES_URL!, schema);
      }
    },
  );
});

function createStorage(schema: string) {
  return postgresStorage({ connectionString: POSTGRES_URL!, schema });
}
