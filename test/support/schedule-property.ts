import fc from 'fast-check';
import { z } from 'zod';
import { expect } from 'vitest';
import { defineTool, type ScriptedStep, type SessionStorage, type TurnOutcome, type WaitResult } from '../../src/index.js';
import type { StorageMethod } from '../../storage/faulty-storage.js';
import { harness, type Harness } from './harness.js';

/**
 * One random schedule (issue 4, item 3; issue 9 runs it at full strength): random interleavings of
 * commands against a random model script and at most one storage fault, on a fresh runtime with a
 * fresh session. Whatever happens: every command answers with a typed value, no actor ends in
 * `error`, sequences have no gaps, nothing is emitted for a turn after its `turn_finished`, every
 * stored turn status matches its outcome, and no tool call has two results (and, without faults,
 * none has zero). The same model as `test/hostile/schedules.test.ts`, which runs a short version
 * in `npm test`.
 */

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

/**
 * Starts weigh four times any other command: drawn uniformly (as in `test/hostile/`), five
 * schedules in six never started a turn at all.
 */
const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.constant<Command>({ c: 'start' }), weight: 4 },
  {
    arbitrary: fc.constantFrom<Command>(
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
    weight: 11,
  },
  { arbitrary: fc.constantFrom<'ask' | 'auto' | 'read_only'>('ask', 'auto', 'read_only').map((mode): Command => ({ c: 'mode', mode })), weight: 1 },
);

type Fault = { method: StorageMethod; at: number } | null;

/**
 * A fault in one schedule of two (fast-check's default option frequency gave five in six), aimed at
 * a call of its method a schedule reaches often enough: drawn among the first seven calls of every
 * method alike, nine faults in ten aimed past the last call of their method and never fired. The
 * plan is saved only when the model calls `update_plan`, so its faults are drawn less often.
 */
const FAULTS: { method: StorageMethod; last: number; weight: number }[] = [
  { method: 'beginTurn', last: 1, weight: 2 },
  { method: 'appendMessage', last: 2, weight: 3 },
  { method: 'endTurn', last: 1, weight: 2 },
  { method: 'writeSpans', last: 1, weight: 2 },
  { method: 'savePlan', last: 0, weight: 1 },
];

const fault: fc.Arbitrary<Fault> = fc.option(
  fc.oneof(...FAULTS.map(({ method, last, weight }) => ({ arbitrary: fc.record({ method: fc.constant(method), at: fc.nat(last) }), weight }))),
  { freq: 2 },
);

export interface Schedule {
  steps: ScriptedStep[];
  commands: Command[];
  fault: Fault;
}

/** What fast-check draws: the model's script, the commands in order, and the storage fault (or none). */
export const scheduleArbitrary: fc.Arbitrary<Schedule> = fc.record({
  steps: fc.array(step, { maxLength: 8 }),
  commands: fc.array(command, { minLength: 1, maxLength: 14, size: 'medium' }),
  fault,
});

const typed = (result: unknown) => {
  const r = result as { ok?: unknown; error?: { code?: unknown } };
  return r.ok === true || (r.ok === false && typeof r.error?.code === 'string');
};

/** What a schedule exercised, for the run's summary. */
export interface ScheduleReach {
  /** Turns the session accepted. */
  turns: number;
  /** Whether the injected fault fired (a fault drawn for a call the schedule never made does not). */
  faultFired: boolean;
}

/** Runs one schedule on a fresh runtime over `storage` (closed at the end) and checks every invariant. */
export async function runSchedule({ steps, commands, fault: injected }: Schedule, storage: SessionStorage): Promise<ScheduleReach> {
  const h = await harness(steps, { tools: [read, write], permissionMode: 'ask', storage });
  if (injected) {
    let calls = 0;
    h.storage.failWhen(injected.method, () => calls++ === injected.at);
  }
  try {
    const turns = await issueAll(h, commands);
    const outcomes = await settle(h, turns);
    await checkInvariants(h, outcomes, injected);
    return { turns: turns.length, faultFired: h.storage.calls.some((c) => c.failed) };
  } finally {
    await h.runtime.shutdown();
  }
}

/** Issues the commands in order; every one must answer typed. Returns the turns accepted. */
async function issueAll(h: Harness, commands: Command[]): Promise<string[]> {
  const turns: string[] = [];
  let n = 0;
  for (const cmd of commands) {
    if (cmd.c === 'start' || cmd.c === 'start_again') {
      const id = cmd.c === 'start' ? `c${++n}` : `c${Math.max(1, n)}`;
      const result = await h.session.startTurn({ clientRequestId: id, input: [{ type: 'text', text: `task ${id}` }] });
      if (result.ok && !turns.includes(result.turnId)) turns.push(result.turnId);
      expect(typed(result)).toBe(true);
    } else {
      expect(typed(await issue(h, cmd))).toBe(true);
    }
  }
  return turns;
}

/** Issues one command other than a start and returns its answer (`{ ok: true }` for those that answer nothing). */
async function issue(h: Harness, cmd: Command): Promise<unknown> {
  const { session } = h;
  const active = () => session.actor.getSnapshot().context.activeTurn;
  const pending = () => session.actor.getSnapshot().context.pendingPermission;
  switch (cmd.c) {
    case 'cancel':
      return session.cancelTurn(active()?.turnId ?? 'none');
    case 'cancel_wrong':
      return session.cancelTurn('turn_wrong');
    case 'approve':
    case 'deny': {
      const p = pending();
      return session.resolvePermission({ turnId: p?.turnId ?? 'none', toolCallId: p?.toolCallId ?? 'none', decision: cmd.c === 'approve' ? 'allow_once' : 'deny' });
    }
    case 'approve_wrong':
      return session.resolvePermission({ turnId: active()?.turnId ?? 'none', toolCallId: 'wrong', decision: 'allow_once' });
    case 'deliver':
      return session.deliverAgentMessage({ from: 'w', text: 'note' });
    case 'mode':
      return session.setPermissionMode(cmd.mode);
    case 'snapshot':
      expect(session.snapshot().version).toBe(8);
      return { ok: true };
    case 'replay':
      return session.replayUpdates(0);
    default:
      // 'yield': a macrotask boundary, so every pending promise of the runtime gets to run (no timer involved).
      await new Promise<void>((resolve) => setImmediate(resolve));
      return { ok: true };
  }
}

/** Ends whatever still runs, then collects every accepted turn's outcome. */
async function settle(h: Harness, turns: string[]): Promise<Map<string, WaitResult>> {
  const active = () => h.session.actor.getSnapshot().context.activeTurn;
  for (let turn = active(); turn; turn = active()) {
    await h.session.cancelTurn(turn.turnId);
    await h.session.waitForTurn(turn.turnId);
  }
  const outcomes = new Map<string, WaitResult>();
  for (const id of turns) outcomes.set(id, await h.session.waitForTurn(id));
  await h.runtime.flushTrace();
  return outcomes;
}

async function checkInvariants(h: Harness, outcomes: Map<string, WaitResult>, injected: Fault): Promise<void> {
  expect(h.session.actor.getSnapshot().status).toBe('active');
  expect(h.updates.map((u) => u.sequence)).toEqual(h.updates.map((_, i) => i + 1));
  const finished = new Set<string>();
  for (const u of h.updates) {
    expect(finished.has(u.turnId)).toBe(false);
    if (u.update.type === 'turn_finished') finished.add(u.turnId);
  }
  for (const row of await h.storage.listTurns(h.session.id)) {
    const outcome = outcomes.get(row.id) as TurnOutcome | undefined;
    if (!outcome || injected?.method === 'endTurn') continue;
    expect(row.status).toBe(outcome.status);
  }
  const stored = await h.storage.listMessages(h.session.id);
  const results = new Map<string, number>();
  for (const m of stored) if (m.message.role === 'tool') results.set(m.message.toolCallId, (results.get(m.message.toolCallId) ?? 0) + 1);
  for (const count of results.values()) expect(count).toBe(1);
  if (injected) return;
  for (const m of stored) {
    if (m.message.role === 'assistant') for (const call of m.message.toolCalls) expect(results.get(call.id)).toBe(1);
  }
}
