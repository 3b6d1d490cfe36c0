import { createActor, fromCallback, fromPromise, SimulatedClock, type AnyActorRef, type EventObject } from 'xstate';
import { describe, expect, it } from 'vitest';
import { isTaskTransition, TASK_TRANSITIONS, taskMachine, type TaskInput, type TaskState } from '../../machines/task.machine.js';
import type { AdmissionDecision, Change, RunningClockInput, SessionActorInput, SessionOrder, TurnEnd } from '../../machines/task.effects.js';
import { RunningTime } from '../../src/tasks/running-time.js';
import { exploreAllPairs, LC1_TABLE, PROBES } from './task-pairs.js';

const ALL_STATES = Object.keys(TASK_TRANSITIONS) as TaskState[];
const MAX_DURATION_MS = 60_000;

/**
 * The task chart with a stub gate and a stub session the test drives by hand. Its running clock is
 * the runtime's (`RunningTime`) on the test's simulated clock, so time passes only when told to.
 */
function task(options: { decision?: AdmissionDecision | Error; input?: Partial<TaskInput>; runningMs?: number } = {}) {
  const orders: SessionOrder[] = [];
  const log: string[] = [];
  const clock = new SimulatedClock();
  const runningTime = new RunningTime(MAX_DURATION_MS, options.runningMs ?? 0, clock, () => clock.now());
  let session: AnyActorRef | null = null;
  const machine = taskMachine.provide({
    actors: {
      admit: fromPromise(async () => {
        const decision = options.decision ?? { approve: true, risk: 'R2' };
        if (decision instanceof Error) throw decision;
        return decision;
      }),
      session: fromCallback<SessionOrder, SessionActorInput>(({ receive, sendBack }) => {
        session = { send: sendBack } as unknown as AnyActorRef;
        receive((order) => orders.push(order));
        return () => log.push('session stopped');
      }),
      runningClock: fromCallback<EventObject, RunningClockInput>(({ sendBack }) => runningTime.run(() => sendBack({ type: 'clock.expired' }))),
    },
    actions: {
      recordTransition: ({ context }, params: Change) => log.push(`${context.state}→${params.to} (${params.reason})`),
      announceCreated: (_, params) => log.push(`session_created ${params.risk}`),
      announceRecovered: (_, params) => log.push(`recovered ${params.state}`),
      reportError: (_, params) => log.push(`error ${params.code}`),
      announceClosed: (_, params) => log.push(`closed ${params.finalState} (${params.reason})`),
    },
  });
  const input: TaskInput = { taskId: 'task-1', turnCount: 2, turnsDone: 0, startState: 'PENDING', abortCleanupMs: 5_000, ...options.input };
  const actor = createActor(machine, { input, clock });
  actor.start();
  let commands = 0;
  return {
    actor,
    orders,
    log,
    clock,
    runningTime,
    /** An event from the session, as the runtime's session actor would send it. */
    fromSession: (event: Parameters<typeof actor.send>[0]) => session!.send(event),
    finishTurn: (end: TurnEnd = { status: 'completed' }) => session!.send({ type: 'session.turn_finished', end }),
    command(type: 'task.pause' | 'task.resume' | 'task.abort') {
      const commandId = `c${++commands}`;
      actor.send({ type, commandId });
      const reply = actor.getSnapshot().context.reply;
      return reply?.commandId === commandId ? reply.result : undefined;
    },
    state: () => actor.getSnapshot().context.state,
  };
}

/** Resolves once the admission gate's promise has settled and the chart moved on. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('task chart (LC-1)', () => {
  it('the table of LC-1 is the seed’s, exactly', () => {
    const allowed = ALL_STATES.flatMap((from) => ALL_STATES.filter((to) => isTaskTransition(from, to)).map((to) => `${from}→${to}`));
    expect(allowed.sort()).toEqual(LC1_TABLE.slice().sort());
  });

  it('drives every state the chart can reach with every event: each change of state it makes is in LC-1’s table, and it makes them all', () => {
    const { pairs, taken, problems, configurations, pending } = exploreAllPairs();
    expect(problems).toEqual([]);
    // Every (state, event) pair was tried, from each state a task can start in (the gate's answers only where the gate runs);
    // and each of LC-1's transitions occurs.
    expect(configurations).toBeGreaterThan(20);
    const gateAnswers = PROBES.filter((p) => 'gate' in p).length;
    expect(pairs).toBe(configurations * (PROBES.length - gateAnswers) + pending * gateAnswers);
    expect([...taken].sort()).toEqual(LC1_TABLE.slice().sort());
  });

  it('admits, runs each turn in order and completes, announcing the session and closing it', async () => {
    const t = task();
    await settled();
    expect(t.state()).toBe('RUNNING');
    expect(t.orders).toEqual([{ type: 'run_turn', index: 0 }]);
    t.finishTurn();
    expect(t.orders.at(-1)).toEqual({ type: 'run_turn', index: 1 });
    t.finishTurn();
    expect(t.actor.getSnapshot().status).toBe('done');
    expect(t.actor.getSnapshot().output).toEqual({ state: 'COMPLETED', reason: 'all_turns_completed' });
    expect(t.log).toEqual(['session_created R2', 'PENDING→RUNNING (approved)', 'RUNNING→COMPLETED (all_turns_completed)', 'closed COMPLETED (all_turns_completed)', 'session stopped']);
  });

  it('rejects with the gate’s reason, and a failing gate is no approval', async () => {
    const rejected = task({ decision: { approve: false, reason: 'risk R5 over the limit' } });
    await settled();
    expect(rejected.actor.getSnapshot().output).toEqual({ state: 'REJECTED', reason: 'risk R5 over the limit' });
    expect(rejected.orders).toEqual([]);
    const failing = task({ decision: new Error('gate down') });
    await settled();
    expect(failing.actor.getSnapshot().output).toEqual({ state: 'REJECTED', reason: 'admission failed: gate down' });
  });

  it('pauses inside a turn only once the session holds at its checkpoint, and resumes there', async () => {
    const t = task();
    await settled();
    expect(t.command('task.pause')).toEqual({ ok: true });
    expect(t.orders.at(-1)).toEqual({ type: 'hold' });
    expect(t.state()).toBe('RUNNING');
    t.fromSession({ type: 'session.held' });
    expect(t.state()).toBe('PAUSED');
    expect(t.command('task.pause')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'PAUSED', to: 'PAUSED' } });
    expect(t.command('task.resume')).toEqual({ ok: true });
    expect(t.orders.at(-1)).toEqual({ type: 'release' });
    expect(t.state()).toBe('RUNNING');
    // The held turn goes on: no second run of it.
    expect(t.orders.filter((o) => o.type === 'run_turn')).toHaveLength(1);
    t.finishTurn();
    t.finishTurn();
    expect(t.actor.getSnapshot().output?.state).toBe('COMPLETED');
  });

  it('pauses at the turn boundary when the turn ends before it reaches a checkpoint, and resuming starts the next turn', async () => {
    const t = task();
    await settled();
    t.command('task.pause');
    t.finishTurn();
    expect(t.state()).toBe('PAUSED');
    expect(t.orders.filter((o) => o.type === 'run_turn')).toHaveLength(1);
    t.command('task.resume');
    expect(t.orders.at(-1)).toEqual({ type: 'run_turn', index: 1 });
  });

  it('withdraws a pause resumed before it took effect; a hold reported after that is ignored', async () => {
    const t = task();
    await settled();
    t.command('task.pause');
    expect(t.command('task.resume')).toEqual({ ok: true });
    expect(t.orders.slice(-2)).toEqual([{ type: 'hold' }, { type: 'release' }]);
    t.fromSession({ type: 'session.held' });
    expect(t.state()).toBe('RUNNING');
    expect(t.command('task.resume')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'RUNNING', to: 'RUNNING' } });
  });

  it('aborts from RUNNING and from PAUSED: the session is told, then ABORTED and closed', async () => {
    for (const paused of [false, true]) {
      const t = task();
      await settled();
      if (paused) {
        t.command('task.pause');
        t.fromSession({ type: 'session.held' });
      }
      expect(t.command('task.abort')).toEqual({ ok: true });
      expect(t.state()).toBe('ABORTING');
      expect(t.orders.at(-1)).toEqual({ type: 'abort' });
      expect(t.command('task.abort')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'ABORTING', to: 'ABORTING' } });
      expect(t.command('task.resume')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'ABORTING', to: 'RUNNING' } });
      t.fromSession({ type: 'session.aborted' });
      expect(t.actor.getSnapshot().output).toEqual({ state: 'ABORTED', reason: 'aborted' });
      expect(t.log.slice(-2)).toEqual(['closed ABORTED (aborted)', 'session stopped']);
    }
  });

  it('bounds the abort’s cleanup: ABORTED when the session does not answer in time', async () => {
    const t = task();
    await settled();
    t.command('task.abort');
    t.clock.increment(5_000);
    expect(t.actor.getSnapshot().output).toEqual({ state: 'ABORTED', reason: 'cleanup_timed_out' });
  });

  it('fails with reason timeout once the task has been RUNNING for its max duration (LC-4)', async () => {
    const t = task();
    await settled();
    t.clock.increment(MAX_DURATION_MS - 1);
    expect(t.actor.getSnapshot().status).toBe('active');
    t.clock.increment(1);
    expect(t.actor.getSnapshot().output).toEqual({ state: 'FAILED', reason: 'timeout' });
    expect(t.log).toContain('RUNNING→FAILED (timeout)');
  });

  it('counts RUNNING time only: a pause stops the clock, however long it lasts, and a resume goes on with what is left', async () => {
    for (const where of ['holding', 'between'] as const) {
      const t = task();
      await settled();
      t.clock.increment(40_000);
      t.command('task.pause');
      if (where === 'holding') t.fromSession({ type: 'session.held' });
      else t.finishTurn();
      expect(t.state()).toBe('PAUSED');
      // A paused task never reaches FAILED: LC-1 has no PAUSED → FAILED.
      t.clock.increment(10 * MAX_DURATION_MS);
      expect(t.state()).toBe('PAUSED');
      expect(t.runningTime.spent).toBe(40_000);
      t.command('task.resume');
      t.clock.increment(19_999);
      expect(t.state()).toBe('RUNNING');
      t.clock.increment(1);
      expect(t.actor.getSnapshot().output).toEqual({ state: 'FAILED', reason: 'timeout' });
      expect(t.log.filter((line) => line.includes('→'))).toEqual([
        'PENDING→RUNNING (approved)',
        'RUNNING→PAUSED (paused_at_checkpoint)',
        'PAUSED→RUNNING (resumed)',
        'RUNNING→FAILED (timeout)',
      ]);
    }
  });

  it('a recovered task goes on with the RUNNING time it had spent', () => {
    const t = task({ input: { startState: 'RUNNING' }, runningMs: 50_000 });
    t.clock.increment(9_999);
    expect(t.state()).toBe('RUNNING');
    t.clock.increment(1);
    expect(t.actor.getSnapshot().output).toEqual({ state: 'FAILED', reason: 'timeout' });
  });

  it('a session that gives out while the task is paused aborts it: ABORTING, then ABORTED, with the failure as the reason', async () => {
    for (const where of ['holding', 'between'] as const) {
      const t = task();
      await settled();
      t.command('task.pause');
      if (where === 'holding') t.fromSession({ type: 'session.held' });
      else t.finishTurn();
      t.fromSession({ type: 'session.failed', message: 'the agent session closed' });
      expect(t.state()).toBe('ABORTING');
      expect(t.orders.at(-1)).toEqual({ type: 'abort' });
      t.fromSession({ type: 'session.aborted' });
      expect(t.actor.getSnapshot().output).toEqual({ state: 'ABORTED', reason: 'session_error: the agent session closed' });
      expect(t.log.filter((line) => line.includes('→') || line.startsWith('error') || line.startsWith('closed'))).toEqual([
        'PENDING→RUNNING (approved)',
        'RUNNING→PAUSED (paused_at_checkpoint)',
        'error session_error',
        'PAUSED→ABORTING (session_error: the agent session closed)',
        'ABORTING→ABORTED (session_error: the agent session closed)',
        'closed ABORTED (session_error: the agent session closed)',
      ]);
    }
  });

  it('a held turn that ends under the pause (cancelled or timed out from outside) aborts the task with that reason', async () => {
    const t = task();
    await settled();
    t.command('task.pause');
    t.fromSession({ type: 'session.held' });
    t.finishTurn({ status: 'cancelled', code: 'cancelled', message: 'the turn was cancelled' });
    expect(t.state()).toBe('ABORTING');
    expect(t.log).toContain('error cancelled');
    t.fromSession({ type: 'session.aborted' });
    expect(t.actor.getSnapshot().output).toEqual({ state: 'ABORTED', reason: 'turn_cancelled' });
  });

  it('fails when a turn fails or the session gives out, reporting the error first', async () => {
    const t = task();
    await settled();
    t.finishTurn({ status: 'failed', code: 'model_error', message: 'provider down' });
    expect(t.actor.getSnapshot().output).toEqual({ state: 'FAILED', reason: 'turn_failed' });
    expect(t.log).toContain('error model_error');
    const s = task();
    await settled();
    s.fromSession({ type: 'session.failed', message: 'storage gone' });
    expect(s.actor.getSnapshot().output).toEqual({ state: 'FAILED', reason: 'session_error: storage gone' });
  });

  it('refuses every command LC-1 does not allow while PENDING, with a typed result', () => {
    const t = task();
    expect(t.state()).toBe('PENDING');
    expect(t.command('task.pause')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'PENDING', to: 'PAUSED' } });
    expect(t.command('task.resume')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'PENDING', to: 'RUNNING' } });
    expect(t.command('task.abort')).toEqual({ ok: false, error: { code: 'InvalidTransition', from: 'PENDING', to: 'ABORTING' } });
  });

  it('starts a recovered task where it was, announcing the recovery (LC-4)', () => {
    const running = task({ input: { startState: 'RUNNING', turnsDone: 1 } });
    expect(running.log).toEqual(['recovered RUNNING']);
    expect(running.orders).toEqual([{ type: 'run_turn', index: 1 }]);
    const paused = task({ input: { startState: 'PAUSED', turnsDone: 1 } });
    expect(paused.state()).toBe('PAUSED');
    expect(paused.orders).toEqual([]);
    const aborting = task({ input: { startState: 'ABORTING' } });
    expect(aborting.orders).toEqual([{ type: 'abort' }]);
  });
});
