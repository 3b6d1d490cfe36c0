import { createActor, fromCallback, fromPromise, SimulatedClock, type EventObject } from 'xstate';
import { isTaskTransition, taskMachine, TERMINAL_TASK_STATES, type TaskContext, type TaskInput, type TaskState } from '../../machines/task.machine.js';
import type { AdmissionDecision, Change, RunningClockInput, SessionActorInput, SessionOrder } from '../../machines/task.effects.js';

/**
 * Every (state, event) pair of the task chart, driven on the chart itself: from each state a task
 * can start in (new, or recovered RUNNING, PAUSED or ABORTING), every configuration the chart can
 * reach is found by sending it every event there is — whether or not the runtime would send it
 * there — and each change of state it makes is checked against LC-1's table. An event a state
 * ignores is fine; a change of state outside the table, or one the chart makes without recording
 * it, is a problem. Configurations are reached again by replaying the events that found them, on a
 * fresh actor with its own simulated clock (the abort's cleanup bound is the one timer: "time
 * passes" is one of the probes).
 */

/** LC-1's valid transitions, as seed 002 lists them. */
export const LC1_TABLE = [
  'PENDING→RUNNING',
  'PENDING→REJECTED',
  'RUNNING→PAUSED',
  'RUNNING→ABORTING',
  'RUNNING→COMPLETED',
  'RUNNING→FAILED',
  'PAUSED→RUNNING',
  'PAUSED→ABORTING',
  'ABORTING→ABORTED',
];

const ABORT_CLEANUP_MS = 5_000;
const START_STATES: TaskInput['startState'][] = ['PENDING', 'RUNNING', 'PAUSED', 'ABORTING'];

/**
 * One thing that can happen to the chart: an event sent to it, or time passing on its clock. The
 * admission gate's answers exist only while the gate does (`pending` invokes it): XState takes an
 * error event of an actor that is not there as the chart's own error, which no runtime can send.
 */
type Probe = { name: string; event: EventObject & Record<string, unknown>; gate?: true } | { name: 'time passes'; event: null };

const ended = (status: 'failed' | 'cancelled' | 'timed_out' | 'interrupted') => ({ status, code: status, message: `the turn ${status}` });

export const PROBES: Probe[] = [
  { name: 'pause', event: { type: 'task.pause', commandId: 'c' } },
  { name: 'resume', event: { type: 'task.resume', commandId: 'c' } },
  { name: 'abort', event: { type: 'task.abort', commandId: 'c' } },
  { name: 'admitted', gate: true, event: { type: 'xstate.done.actor.admit', output: { approve: true, risk: 'R2' } satisfies AdmissionDecision } },
  { name: 'refused', gate: true, event: { type: 'xstate.done.actor.admit', output: { approve: false, reason: 'no' } satisfies AdmissionDecision } },
  { name: 'gate failed', gate: true, event: { type: 'xstate.error.actor.admit', error: new Error('gate down') } },
  { name: 'turn completed', event: { type: 'session.turn_finished', end: { status: 'completed' } } },
  ...(['failed', 'cancelled', 'timed_out', 'interrupted'] as const).map((status) => ({ name: `turn ${status}`, event: { type: 'session.turn_finished', end: ended(status) } })),
  { name: 'held', event: { type: 'session.held' } },
  { name: 'aborted', event: { type: 'session.aborted' } },
  { name: 'session failed', event: { type: 'session.failed', message: 'gone' } },
  { name: 'clock expired', event: { type: 'clock.expired' } },
  { name: 'time passes', event: null },
];

/** The transitions the chart under test records, in order (one chart runs at a time). */
let changes: Array<{ from: TaskState; to: TaskState }> = [];

/** The chart with inert stubs: the gate never answers and the session does nothing by itself. Transitions are logged. */
const machine = taskMachine.provide({
  actors: {
    admit: fromPromise<AdmissionDecision, { taskId: string }>(() => new Promise<never>(() => undefined)),
    session: fromCallback<SessionOrder, SessionActorInput>(() => undefined),
    runningClock: fromCallback<EventObject, RunningClockInput>(() => undefined),
  },
  actions: {
    recordTransition: ({ context }: { context: TaskContext }, params: Change) => void changes.push({ from: context.state, to: params.to }),
    announceCreated: () => undefined,
    announceRecovered: () => undefined,
    reportError: () => undefined,
    announceClosed: () => undefined,
  },
});

/** A fresh chart started in `startState`, on its own simulated clock. */
function chart(startState: TaskInput['startState']) {
  const clock = new SimulatedClock();
  const input: TaskInput = { taskId: 't', turnCount: 2, turnsDone: 0, startState, abortCleanupMs: ABORT_CLEANUP_MS };
  changes = [];
  const actor = createActor(machine, { input, clock }).start();
  const apply = (probe: Probe) => (probe.event ? actor.send(probe.event as never) : clock.increment(ABORT_CLEANUP_MS));
  return { actor, apply, changes: () => changes };
}

function keyOf(snapshot: { value: unknown; status: string; context: TaskContext }): string {
  const c = snapshot.context;
  return JSON.stringify([snapshot.value, snapshot.status, c.state, c.pauseRequested, c.turnsDone]);
}

/** Probes every active configuration reachable from each start with every probe; `configurations` counts those probed, `pending` those where the gate runs. */
export function exploreAllPairs(): { configurations: number; pending: number; pairs: number; taken: Set<string>; problems: string[] } {
  const problems: string[] = [];
  const taken = new Set<string>();
  let configurations = 0;
  let pending = 0;
  let pairs = 0;
  for (const startState of START_STATES) {
    const seen = new Set<string>();
    const queue: Probe[][] = [[]];
    const replay = (path: Probe[]) => {
      const c = chart(startState);
      for (const probe of path) c.apply(probe);
      changes = [];
      return c;
    };
    seen.add(keyOf(replay([]).actor.getSnapshot()));
    while (queue.length > 0) {
      const path = queue.shift()!;
      // A final state takes no event: the task is over (checked as it was reached).
      const here = replay(path).actor.getSnapshot();
      if (here.status === 'done') continue;
      configurations += 1;
      if (here.matches('pending')) pending += 1;
      for (const probe of PROBES) {
        if ('gate' in probe && !here.matches('pending')) continue;
        pairs += 1;
        const c = replay(path);
        const before = c.actor.getSnapshot();
        c.apply(probe);
        const after = c.actor.getSnapshot();
        if (after.status === 'error') problems.push(`${startState} ${[...path.map((p) => p.name), probe.name].join(' → ')}: the chart failed: ${String(after.error)}`);
        const where = `${startState} ${[...path.map((p) => p.name), probe.name].join(' → ')}`;
        problems.push(...checkStep(before.context.state, after.context.state, after.status, c.changes(), where));
        for (const change of c.changes()) taken.add(`${change.from}→${change.to}`);
        c.actor.stop();
        const key = keyOf(after);
        if (seen.has(key)) continue;
        seen.add(key);
        queue.push([...path, probe]);
      }
    }
  }
  return { configurations, pending, pairs, taken, problems };
}

/** What one (state, event) pair did wrong, if anything. */
function checkStep(before: TaskState, after: TaskState, status: string, changes: Array<{ from: TaskState; to: TaskState }>, where: string): string[] {
  const problems: string[] = [];
  let state = before;
  for (const { from, to } of changes) {
    if (from !== state) problems.push(`${where}: recorded ${from}→${to} while the task was ${state}`);
    if (!isTaskTransition(from, to)) problems.push(`${where}: ${from}→${to} is not in LC-1's table`);
    state = to;
  }
  if (state !== after) problems.push(`${where}: the task became ${after} without recording it (last recorded ${state})`);
  if (TERMINAL_TASK_STATES.has(after) !== (status === 'done')) problems.push(`${where}: the task is ${after} but the chart is ${status}`);
  return problems;
}
