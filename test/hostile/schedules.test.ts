import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineTool, type ScriptedStep, type SessionStorage, type TurnOutcome, type WaitResult } from '../../src/index.js';
import type { StorageMethod } from '../../storage/faulty-storage.js';
import { harness } from '../support/harness.js';
import { POSTGRES_URL, postgresSchema } from '../support/databases.js';

/**
 * Issue 4, item 3: random interleavings of commands against random model scripts and random storage
 * faults. Whatever happens: every command answers with a typed value, no actor ends in `error`,
 * sequences have no gaps, nothing is emitted for a turn after its `turn_finished`, every stored
 * turn status matches its outcome, and no tool call has two results (and, without faults, none
 * has zero).
 */

const SEED = 4242;

const read = defineTool({ name: 'read', description: 'reads', effect: 'read', input: z.object({ n: z.number() }), execute: async ({ n }) => ({ status: 'succeeded', content: `r${n}` }) });
const write = defineTool({ name: 'write', description: 'writes', effect: 'write', input: z.object({}), execute: async () => ({ status: 'succeeded', content: 'w' }) });

const step: fc.Arbitrary<ScriptedStep> = fc.oneof(
  fc.constantFrom<ScriptedStep>(
    { text: 'final' },
    { text: 'w', toolCalls: [{ name: 'write', args: {} }] },
    { text: 'both', toolCalls: [{ name: 'write', args: {} }, { name: 'read', args: { n: 9 } }] },
    { text: 'u', toolCalls: [{ name: 'nope', args: {} }] },
    { text: 'bad', toolCalls: [{ name: 'read', argumentsText: '{"n":' }] },
    { text: 'p', toolCalls: [{ name: 'update_plan', args: { plan: [{ step: 'x', status: 'in_progress' }] } }] },
    { error: 'provider' },
    { error: 'overflow' },
    { error: 'protocol' },
  ),
  fc.nat(2).map((n): ScriptedStep => ({ text: 'r', toolCalls: [{ name: 'read', args: { n } }] })),
);

type Command =
  | { c: 'start' | 'start_again' | 'cancel' | 'cancel_wrong' | 'approve' | 'deny' | 'approve_wrong' | 'deliver' | 'snapshot' | 'replay' | 'yield' }
  | { c: 'mode'; mode: 'ask' | 'auto' | 'read_only' };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.constantFrom<Command>(
    { c: 'start' },
    { c: 'start_again' },
    { c: 'cancel' },
    { c: 'cancel_wrong' },
    { c: 'approve' },
    { c: 'deny' },
    { c: 'approve_wrong' },
    { c: 'deliver' },
    { c: 'snapshot' },
    { c: 'replay' },
    { c: 'yield' },
    { c: 'yield' },
  ),
  fc.constantFrom<'ask' | 'auto' | 'read_only'>('ask', 'auto', 'read_only').map((mode): Command => ({ c: 'mode', mode })),
);

const fault = fc.option(fc.record({ method: fc.constantFrom<StorageMethod>('beginTurn', 'appendMessage', 'endTurn', 'writeSpans', 'savePlan'), at: fc.nat(6) }));

const typed = (result: unknown) => {
  const r = result as { ok?: unknown; error?: { code?: unknown } };
  return r.ok === true || (r.ok === false && typeof r.error?.code === 'string');
};

async function schedule(
  steps: ScriptedStep[],
  commands: Command[],
  injected: { method: StorageMethod; at: number } | null,
  storage?: SessionStorage,
) {
  const h = await harness(steps, { tools: [read, write], permissionMode: 'ask', ...(storage ? { storage } : {}) });
  const { session } = h;
  if (injected) {
    let calls = 0;
    h.storage.failWhen(injected.method, () => calls++ === injected.at);
  }
  const turns: string[] = [];
  let n = 0;
  const active = () => session.actor.getSnapshot().context.activeTurn;
  const pending = () => session.actor.getSnapshot().context.pendingPermission;
  try {
    for (const cmd of commands) {
      let result: unknown = { ok: true };
      switch (cmd.c) {
        case 'start':
        case 'start_again': {
          const id = cmd.c === 'start' ? `c${++n}` : `c${Math.max(1, n)}`;
          result = await session.startTurn({ clientRequestId: id, input: [{ type: 'text', text: `task ${id}` }] });
          const r = result as { ok: boolean; turnId?: string };
          if (r.ok && r.turnId && !turns.includes(r.turnId)) turns.push(r.turnId);
          break;
        }
        case 'cancel':
          result = await session.cancelTurn(active()?.turnId ?? 'none');
          break;
        case 'cancel_wrong':
          result = await session.cancelTurn('turn_wrong');
          break;
        case 'approve':
        case 'deny': {
          const p = pending();
          result = await session.resolvePermission({ turnId: p?.turnId ?? 'none', toolCallId: p?.toolCallId ?? 'none', decision: cmd.c === 'approve' ? 'allow_once' : 'deny' });
          break;
        }
        case 'approve_wrong':
          result = await session.resolvePermission({ turnId: active()?.turnId ?? 'none', toolCallId: 'wrong', decision: 'allow_once' });
          break;
        case 'deliver':
          result = await session.deliverAgentMessage({ from: 'w', text: 'note' });
          break;
        case 'mode':
          result = await session.setPermissionMode(cmd.mode);
          break;
        case 'snapshot':
          expect(session.snapshot().version).toBe(7);
          break;
        case 'replay':
          result = session.replayUpdates(0);
          break;
        case 'yield':
          // A macrotask boundary: every pending promise of the runtime gets to run (no timer involved).
          await new Promise<void>((resolve) => setImmediate(resolve));
          break;
      }
      expect(typed(result)).toBe(true);
    }
    // Settle: end whatever still runs, then collect every outcome.
    for (let turn = active(); turn; turn = active()) {
      await session.cancelTurn(turn.turnId);
      await session.waitForTurn(turn.turnId);
    }
    const outcomes = new Map<string, WaitResult>();
    for (const id of turns) outcomes.set(id, await session.waitForTurn(id));
    await h.runtime.flushTrace();

    expect(session.actor.getSnapshot().status).toBe('active');
    expect(h.updates.map((u) => u.sequence)).toEqual(h.updates.map((_, i) => i + 1));
    const finishedAt = new Map<string, number>();
    h.updates.forEach((u, i) => {
      expect(finishedAt.has(u.turnId)).toBe(false);
      if (u.update.type === 'turn_finished') finishedAt.set(u.turnId, i);
    });
    const rows = await h.storage.listTurns(session.id);
    for (const row of rows) {
      const outcome = outcomes.get(row.id) as TurnOutcome | undefined;
      if (!outcome || injected?.method === 'endTurn') continue;
      expect(row.status).toBe(outcome.status);
    }
    const stored = await h.storage.listMessages(session.id);
    const results = new Map<string, number>();
    for (const m of stored) if (m.message.role === 'tool') results.set(m.message.toolCallId, (results.get(m.message.toolCallId) ?? 0) + 1);
    for (const count of results.values()) expect(count).toBe(1);
    if (!injected) {
      for (const m of stored) {
        if (m.message.role === 'assistant') for (const call of m.message.toolCalls) expect(results.get(call.id)).toBe(1);
      }
    }
  } finally {
    await h.runtime.shutdown();
  }
}

describe('random command schedules (issue 4, item 3)', () => {
  it('keep every invariant over 1 000 seeded runs on SQLite', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 8 }), fc.array(command, { maxLength: 14 }), fault, async (steps, commands, injected) => {
        await schedule(steps, commands, injected);
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  }, 300_000);

  it.skipIf(!POSTGRES_URL)('keep every invariant over 100 seeded runs on PostgreSQL', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 8 }), fc.array(command, { maxLength: 14 }), fault, async (steps, commands, injected) => {
        const db = postgresSchema(POSTGRES_URL!);
        try {
          await schedule(steps, commands, injected, db.open());
        } finally {
          await db.drop();
        }
      }),
      { seed: SEED, numRuns: 100 },
    );
  }, 300_000);
});
