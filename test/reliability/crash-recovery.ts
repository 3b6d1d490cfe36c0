import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createRuntime, INTERRUPTED_RESULT_TEXT, postgresStorage, scriptedModel, type SessionStorage, type StoredMessage } from '../../src/index.js';
import { dropPostgresSchema, POSTGRES_URL, sqliteFile } from '../support/databases.js';
import { runHost, type HostRun, type KillAt } from './host-control.js';

/**
 * Issue 4, item 4: after a host process is SIGKILLed mid-turn, a new runtime starts on the same
 * database. Nothing may stay `running`, nothing stored before the kill may be lost or duplicated,
 * every stored call has its result or gets the synthesized one, no side effect is retried, and the
 * session takes a new turn.
 */

export type Dialect = 'sqlite' | 'postgres';

/** A fresh database and side-effect log for one host run, and how to open and drop them. */
export interface CrashWorkspace {
  effects: string;
  /** What the host is told to open. */
  target: object;
  open(): SessionStorage;
  drop(): Promise<void>;
}

export function crashWorkspace(dialect: Dialect): CrashWorkspace {
  const effects = join(tmpdir(), `turnchart-effects-${randomUUID()}`);
  writeFileSync(effects, '');
  const removeEffects = () => rmSync(effects, { force: true });
  if (dialect === 'sqlite') {
    const file = sqliteFile();
    return { effects, target: { sqlite: file.file, effects }, open: file.open, drop: () => file.drop().finally(removeEffects) };
  }
  const schema = `tc_crash_${randomUUID().replaceAll('-', '')}`;
  return {
    effects,
    target: { postgres: POSTGRES_URL, schema, effects },
    open: () => postgresStorage({ connectionString: POSTGRES_URL!, schema }),
    drop: () => dropPostgresSchema(POSTGRES_URL!, schema).finally(removeEffects),
  };
}

/** Kills one host as planned, restarts on the same database and checks what a crash must not break. */
export async function killAndRecover(dialect: Dialect, at: KillAt): Promise<HostRun> {
  const ws = crashWorkspace(dialect);
  try {
    const run = await runHost(ws.target, at);
    await expectRecovery(ws, run.sessionId);
    return run;
  } finally {
    await ws.drop();
  }
}

/** What the database and the side-effect log held when the host died, read before any runtime corrects it. */
async function atKill(ws: CrashWorkspace, sessionId: string): Promise<{ stored: StoredMessage[]; effects: string }> {
  const effects = readFileSync(ws.effects, 'utf8');
  const storage = ws.open();
  try {
    await storage.migrate();
    return { stored: await storage.listMessages(sessionId), effects };
  } finally {
    await storage.close();
  }
}

async function expectRecovery(ws: CrashWorkspace, sessionId: string): Promise<void> {
  expect(sessionId).not.toBe('');
  const before = await atKill(ws, sessionId);
  const model = scriptedModel([{ text: 'recovered' }]);
  const storage = ws.open();
  const runtime = await createRuntime({ storage, model });
  try {
    expect((await storage.listTurns(sessionId)).some((t) => t.status === 'running')).toBe(false);
    expect((await storage.listSpans(sessionId)).some((s) => s.status === 'running')).toBe(false);
    expect(await storage.listMessages(sessionId)).toEqual(before.stored);

    const session = await runtime.openSession(sessionId);
    const started = await session.startTurn({ clientRequestId: 'after-crash', input: [{ type: 'text', text: 'what happened?' }] });
    expect(started.ok).toBe(true);
    expect(await session.waitForTurn(started.ok ? started.turnId : '')).toEqual({ status: 'completed', finalText: 'recovered' });

    expectEveryCallAnswered(before.stored, model.requests[0]!.messages);
    // Nothing was retried: the side effects are exactly those that happened before the kill.
    expect(readFileSync(ws.effects, 'utf8')).toBe(before.effects);
    const after = await storage.listMessages(sessionId);
    expect(after.slice(0, before.stored.length)).toEqual(before.stored);
    expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
  } finally {
    await runtime.shutdown();
  }
}

/** Every call stored before the kill reaches the next request with a result: its own, or the synthesized `interrupted` one. */
function expectEveryCallAnswered(stored: StoredMessage[], request: readonly { role: string; toolCallId?: string }[]): void {
  const results = new Set(stored.flatMap((m) => (m.message.role === 'tool' ? [m.message.toolCallId] : [])));
  const calls = stored.flatMap((m) => (m.message.role === 'assistant' ? m.message.toolCalls : []));
  for (const call of calls) {
    const sent = request.find((m) => m.role === 'tool' && m.toolCallId === call.id);
    expect(sent).toBeDefined();
    if (!results.has(call.id)) expect(sent).toMatchObject({ status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
  }
}
