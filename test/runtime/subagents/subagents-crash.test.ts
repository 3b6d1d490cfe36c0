import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage, type Runtime } from '../../../src/index.js';
import { CRASH_AGENTS } from '../../support/subagent-agents.js';
import { bundled } from '../../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Starts the host process and resolves with the two session ids once the parent waits and the child's model call runs. */
function startHost(file: string) {
  const child = spawn(process.execPath, [bundled('subagent-host'), file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(String(signal ?? code))));
  const running = new Promise<{ parentId: string; childId: string }>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = /RUNNING (\S+) (\S+)/.exec(text);
      if (match) resolve({ parentId: match[1]!, childId: match[2]! });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`the host exited (${code}) before both turns ran:\n${text}`)));
  });
  return { child, running, exited };
}

let dir = '';
let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a crash with a sub-agent running', () => {
  it('SIGKILLed while the parent waits and the child streams: restart corrects both sessions, keeps the link, and both take new turns', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-subagent-crash-'));
    const file = path.join(dir, 'sessions.db');
    const host = startHost(file);
    const { parentId, childId } = await host.running;
    host.child.kill('SIGKILL');
    expect(await host.exited).toBe('SIGKILL');

    const model = scriptedModel([{ text: 'parent again' }, { text: 'child again' }]);
    const storage = sqliteStorage({ filename: file });
    runtime = await createRuntime({
      storage,
      model,
      agents: CRASH_AGENTS,
    });
    // One correction for both sessions: the parent's turn and the child's are interrupted, their spans outcome_unknown.
    expect(runtime.correction.interruptedTurns).toBe(2);
    for (const id of [parentId, childId]) {
      const turns = await storage.listTurns(id);
      expect(turns.map((t) => t.status)).toEqual(['interrupted']);
      expect((await storage.listSpans(id)).filter((s) => s.status === 'running')).toEqual([]);
    }
    expect((await runtime.agentLinks(parentId)).children).toEqual([
      { sessionId: childId, agent: 'worker', link: { sessionId: parentId, turnId: (await storage.listTurns(parentId))[0]!.id, toolCallId: 'spawn-1' } },
    ]);
    expect((await storage.getSession(childId))?.nonInteractive).toBe(true);

    // Nothing is resumed; each session takes a new turn, the parent's unanswered wait answered `interrupted` in its request.
    const parent = await runtime.openSession(parentId);
    const again = await parent.startTurn({ clientRequestId: 'after', input: [{ type: 'text', text: 'status?' }] });
    expect(again.ok && (await parent.waitForTurn(again.turnId))).toMatchObject({ status: 'completed', finalText: 'parent again' });
    const waitResult = model.requests[0]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'wait-1');
    expect(waitResult).toMatchObject({ role: 'tool', status: 'interrupted' });
    const child = await runtime.openSession(childId);
    const childTurn = await child.startTurn({ clientRequestId: 'after', input: [{ type: 'text', text: 'again' }] });
    expect(childTurn.ok && (await child.waitForTurn(childTurn.turnId))).toMatchObject({ status: 'completed', finalText: 'child again' });
  }, 60_000);
});
