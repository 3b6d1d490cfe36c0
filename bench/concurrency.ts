/**
 * `concurrent_sessions_completed`: `count` sessions on one runtime, each running a turn of
 * `toolSteps` tool calls + a final answer, all started before any is awaited.
 */
import { createRuntime, sqliteStorage, type SessionHandle } from '../src/index.js';
import { readTool, stepModel } from './common.js';

export interface ConcurrencyResult {
  sessions: number;
  completed: number;
  notCompleted: Record<string, number>;
  wallMs: number;
  createMs: number;
  /** Trace signals the runtime dropped (full trace queue, RT-26): informational. */
  droppedSignals: number;
}

export async function measureConcurrentSessions(count: number, toolSteps: number): Promise<ConcurrencyResult> {
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: stepModel(toolSteps), tools: [readTool()] });
  const createStarted = performance.now();
  const sessions: SessionHandle[] = [];
  for (let i = 0; i < count; i++) sessions.push(await runtime.createSession({ agent: 'default', permissionMode: 'auto' }));
  const createMs = performance.now() - createStarted;

  const started = performance.now();
  const turns = await Promise.all(
    sessions.map((session, i) => session.startTurn({ clientRequestId: `c${i}`, input: [{ type: 'text', text: 'read two files' }] })),
  );
  const outcomes = await Promise.all(
    turns.map((turn, i) => (turn.ok ? sessions[i]!.waitForTurn(turn.turnId) : Promise.resolve({ status: `refused:${turn.error.code}` }))),
  );
  const wallMs = performance.now() - started;

  let completed = 0;
  const notCompleted: Record<string, number> = {};
  for (const outcome of outcomes) {
    if (outcome.status === 'completed') completed += 1;
    else {
      const key = 'code' in outcome ? `${outcome.status}:${outcome.code}` : outcome.status;
      notCompleted[key] = (notCompleted[key] ?? 0) + 1;
    }
  }
  await runtime.shutdown();
  return { sessions: count, completed, notCompleted, wallMs, createMs, droppedSignals: runtime.droppedSignals };
}
