/**
 * `parallel_tools_speedup` (RL-5): the wall time of one turn whose response asks for 8 read calls of
 * 20 ms each, run serially (the default) against `parallelToolCalls: true` (at most 4 at once), both on
 * SQLite :memory:; the median over several turns of each, and their ratio.
 * `parallel_writes_speedup` (issue 30): the same with 8 write calls (`permissionMode: 'auto'`, so none
 * asks for an approval), which now run side by side too.
 * `parallel_approved_writes_speedup` (issue 30): 8 writes in `ask`, each approval answered as soon as
 * it is asked: serially each write runs before the next is asked; in an approval batch each starts
 * as it is approved, beside the others.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, sqliteStorage, type ScriptedStep } from '../src/index.js';
import { median } from './common.js';

const CALLS = 8;
const READ_MS = 20;

const slowWrite = defineTool({
  name: 'slow_write',
  description: 'a write that takes 20 ms',
  effect: 'write',
  input: z.object({ n: z.number() }),
  execute: async ({ n }, { signal }) => {
    await delay(READ_MS, undefined, { signal });
    return { status: 'succeeded', content: `wrote ${n}` };
  },
});

const slowRead = defineTool({
  name: 'slow_read',
  description: 'a read that takes 20 ms',
  effect: 'read',
  input: z.object({ n: z.number() }),
  execute: async ({ n }, { signal }) => {
    await delay(READ_MS, undefined, { signal });
    return { status: 'succeeded', content: `read ${n}` };
  },
});

/** Which calls the turn makes: reads, writes nothing asks about, or writes each approved as it is asked. */
export type ParallelCase = 'slow_read' | 'slow_write' | 'approved_writes';

async function turnMs(parallel: boolean, which: ParallelCase = 'slow_read'): Promise<number> {
  const tool = which === 'slow_read' ? 'slow_read' : 'slow_write';
  const steps: ScriptedStep[] = [{ text: 'working', toolCalls: Array.from({ length: CALLS }, (_, n) => ({ name: tool, args: { n } })) }, { text: 'done' }];
  const runtime = await createRuntime({
    storage: sqliteStorage({ filename: ':memory:' }),
    model: scriptedModel(steps),
    tools: [slowRead, slowWrite],
    agents: { default: { parallelToolCalls: parallel } },
  });
  const session = await runtime.createSession({ permissionMode: which === 'approved_writes' ? 'ask' : 'auto' });
  // The user who answers at once: each approval is allowed as soon as it is asked.
  const answering = session.updates$.subscribe((u) => {
    if (u.update.type === 'permission_requested') void session.resolvePermission({ turnId: u.turnId, toolCallId: u.update.toolCallId, decision: 'allow_once' });
  });
  const started = performance.now();
  const accepted = await session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'go' }] });
  if (!accepted.ok) throw new Error('refused');
  const outcome = await session.waitForTurn(accepted.turnId);
  answering.unsubscribe();
  const elapsed = performance.now() - started;
  await runtime.shutdown();
  if (outcome.status !== 'completed') throw new Error(`the turn ended ${outcome.status}`);
  return elapsed;
}

export interface ParallelToolsResult {
  serialMs: number;
  parallelMs: number;
  speedup: number;
}

/** Reads by default; `slow_write` for the writes case, `approved_writes` for writes that each ask (issue 30). */
export async function measureParallelTools(turns = 9, tool: ParallelCase = 'slow_read'): Promise<ParallelToolsResult> {
  const serial: number[] = [];
  const parallel: number[] = [];
  await turnMs(false, tool);
  await turnMs(true, tool);
  for (let i = 0; i < turns; i++) {
    serial.push(await turnMs(false, tool));
    parallel.push(await turnMs(true, tool));
  }
  const serialMs = median(serial);
  const parallelMs = median(parallel);
  return { serialMs, parallelMs, speedup: serialMs / parallelMs };
}
