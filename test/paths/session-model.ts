import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { sessionMachine, type SessionContext } from '../../machines/session.machine.js';
import { FRESH_TRACKERS } from '../../machines/guardrails.js';
import { pendingEffectOf, recordEffect } from './recorded-effects.js';
import type { ChartModel, ModelState } from './tour.js';
import type { BusyPolicy } from '../../src/protocol/commands.js';

/**
 * The session chart for traversal. Its own events are commands, which a path issues; the rest come
 * from the turn it runs (an approval request, the end of the turn, a checkpoint that could not be
 * installed), from its effects and from its clock (the run's deadline). The environment keeps what
 * the turn is doing, so a path never asks for a turn event the turn cannot send. The busy policy
 * and the time limit are the session's and its agent's settings, fixed for a session: each
 * scenario is walked on its own.
 */

export interface SessionScenario {
  busyPolicy: BusyPolicy;
  /** The agent's run time limit (RL-3); null for none. */
  runTimeoutMs: number | null;
  /** Turns accepted at most (queued ones included), which bounds the graph. */
  maxTurns: number;
}

/**
 * One tour per busy policy. Enqueueing is walked with a time limit (each run has its own deadline:
 * a queued turn's starts when it does); without one it would take the same course, only resting in
 * `no_deadline` instead, which the other two walk.
 */
export const SESSION_SCENARIOS: SessionScenario[] = [
  { busyPolicy: 'reject', runTimeoutMs: null, maxTurns: 2 },
  // Three turns: the third replaces the second while it still waits.
  { busyPolicy: 'interrupt', runTimeoutMs: null, maxTurns: 3 },
  { busyPolicy: 'enqueue', runTimeoutMs: 1_000, maxTurns: 2 },
];

/** The active turn's course, as the session sees it. */
export type TurnCourse = 'none' | 'working' | 'asking' | 'answered' | 'ending_asking' | 'ending' | 'reloading';

export interface SessionEnv {
  /** The course of the running turn. */
  turn: TurnCourse;
  /** Turns accepted so far. */
  turns: number;
  /** A manual compaction stored a checkpoint a rewind can go back to. */
  checkpoint: boolean;
  /** Real messages came after the last checkpoint; without them a compaction has nothing to do. */
  compactable: boolean;
  /** `stop()` was called: the handle refuses every later command without asking the chart. */
  stopped: boolean;
}

export const traversalSessionMachine = sessionMachine.provide({
  actions: {
    requestEffect: recordEffect,
    emitTurnStarted: () => undefined,
    emitPermissionRequested: () => undefined,
    announceTurnFinished: () => undefined,
    storeQueuedTurn: () => undefined,
    settleCancelledQueuedTurn: () => undefined,
    emitQueueUpdated: () => undefined,
    storeCancelRequest: () => undefined,
    storeApprovalAnswer: () => undefined,
    emitTurnResumed: () => undefined,
    abandonTurnEffects: () => undefined,
  },
});

const ctx = (s: AnyMachineSnapshot) => s.context as SessionContext;
export const DONE_TURN = 'xstate.done.actor.turn';
export const UNKNOWN_TURN = 'turn_unknown';
/** The run's deadline passing: the delayed transition of `running.within_deadline`. */
export const RUN_TIMEOUT = 'xstate.after.runTimeout.session.running.within_deadline';

function startTurn(c: SessionContext, env: SessionEnv, maxTurns: number): EventObject[] {
  const events: EventObject[] = [];
  if (env.turns < maxTurns) events.push({ type: 'session.start_turn', commandId: '', turnId: `t${env.turns + 1}`, clientRequestId: `c${env.turns + 1}` } as EventObject);
  if (env.turns > 0) events.push({ type: 'session.start_turn', commandId: '', turnId: 'dup', clientRequestId: 'c1' } as EventObject);
  return c.reloadRequired ? events.slice(0, 1) : events;
}

function commands({ machine, env }: ModelState<SessionEnv>, maxTurns: number): EventObject[] {
  if (env.stopped) return [];
  const c = ctx(machine);
  const active = c.activeTurn?.turnId ?? UNKNOWN_TURN;
  const live = env.turn === 'working' || env.turn === 'asking';
  const events: Array<EventObject & Record<string, unknown>> = [
    ...startTurn(c, env, maxTurns),
    { type: 'session.cancel_turn', commandId: '', turnId: UNKNOWN_TURN },
    ...c.queue.map((q) => ({ type: 'session.cancel_turn', commandId: '', turnId: q.turnId })),
    { type: 'session.resolve_permission', commandId: '', turnId: UNKNOWN_TURN, toolCallId: 'nope', decision: 'deny' },
    { type: 'session.compact', commandId: '' },
    { type: 'session.rewind', commandId: '', compactionId: 'k' },
    { type: 'session.reload', commandId: '' },
    // agent.switch: the director names the agent the session is not running, so the switch is real.
    { type: 'session.switch_agent', commandId: '', agent: 'other', limits: c.limits },
  ];
  if (c.activeTurn) events.push({ type: 'session.resolve_permission', commandId: '', turnId: active, toolCallId: 'nope', decision: 'deny' });
  if (live) events.push({ type: 'session.cancel_turn', commandId: '', turnId: active });
  events.push({ type: 'session.stop', commandId: '' });
  if (env.turn === 'asking') events.push({ type: 'session.resolve_permission', commandId: '', turnId: active, toolCallId: c.pendingPermission?.toolCallId, decision: 'deny' });
  return events;
}

/** The run passes its time limit whenever its deadline is armed, whatever the turn is doing. */
function clockEvents({ machine }: ModelState<SessionEnv>): EventObject[] {
  return machine.matches({ running: 'within_deadline' }) ? [{ type: RUN_TIMEOUT }] : [];
}

function turnEvents({ env }: ModelState<SessionEnv>): EventObject[] {
  const done = { type: DONE_TURN, output: { outcome: { status: 'completed', finalText: '' }, trackers: FRESH_TRACKERS } };
  switch (env.turn) {
    case 'working':
      return [{ type: 'turn.permission_requested', turnId: 't', toolCallId: 'call', name: 'write_file', paths: [] } as EventObject, { type: 'session.require_reload' }, done];
    case 'answered':
    case 'ending_asking':
      return [{ type: 'turn.permission_settled', turnId: 't' } as EventObject];
    case 'ending':
    case 'reloading':
      return [done];
    default:
      return [];
  }
}

function effectReplies({ machine, env }: ModelState<SessionEnv>): EventObject[] {
  const id = pendingEffectOf(machine);
  const done = { type: 'effect.done', id, output: {} } as EventObject;
  const failed = { type: 'effect.failed', id, error: {} } as EventObject;
  switch (id) {
    case 'finishTurn':
    case 'reloadConversation':
    case 'switchAgent':
    case 'closeSession':
      // Each can be stored or fail; a close that fails leaves the lease to run out.
      return [done, failed];
    // A compaction needs something new to summarize, a rewind a checkpoint; without them they can only fail.
    case 'compact':
      return env.compactable ? [done, failed] : [failed];
    case 'rewindConversation':
      return env.checkpoint ? [done, failed] : [failed];
    default:
      return [];
  }
}

/** A turn became the running one: accepted while the session was idle, or taken from the queue. */
function startedTurn(before: AnyMachineSnapshot, after: AnyMachineSnapshot): boolean {
  const active = ctx(after).activeTurn;
  return active !== null && active.turnId !== ctx(before).activeTurn?.turnId;
}

/** The chart sent the running turn a cancel: the time limit, or a turn that interrupts it (RL-2). */
function cancelsRunningTurn(event: EventObject, before: AnyMachineSnapshot, after: AnyMachineSnapshot): boolean {
  if (event.type === RUN_TIMEOUT) return true;
  const queued = (ctx(after).reply?.result as { queued?: boolean } | undefined)?.queued === true;
  return event.type === 'session.start_turn' && before.matches('running') && ctx(after).busyPolicy === 'interrupt' && queued;
}

/** What the turn does after it was told to stop or to cancel. */
function ending(turn: TurnCourse): TurnCourse {
  return turn === 'asking' ? 'ending_asking' : turn === 'working' ? 'ending' : turn;
}

function nextTurn(env: SessionEnv, event: EventObject & { turnId?: string }, before: AnyMachineSnapshot, after: AnyMachineSnapshot): TurnCourse {
  const { turn } = env;
  if (startedTurn(before, after)) return 'working';
  if (cancelsRunningTurn(event, before, after)) return ending(turn);
  switch (event.type) {
    case 'turn.permission_requested':
      return 'asking';
    case 'session.resolve_permission':
      return turn === 'asking' && event.turnId !== UNKNOWN_TURN && (event as { toolCallId?: string }).toolCallId !== 'nope' ? 'answered' : turn;
    case 'session.cancel_turn':
      return event.turnId === ctx(before).activeTurn?.turnId ? ending(turn) : turn;
    case 'session.stop':
      return ending(turn);
    case 'turn.permission_settled':
      return 'ending';
    case 'session.require_reload':
      return 'reloading';
    case DONE_TURN:
      return 'none';
    default:
      return turn;
  }
}

const compacted = (before: AnyMachineSnapshot, event: EventObject) =>
  before.matches('maintaining') && pendingEffectOf(before) === 'compact' && event.type === 'effect.done';

export const SESSION_LIMITS = { maxModelCalls: 5, doomLoopThreshold: 3 };

export function sessionModel(scenario: SessionScenario): ChartModel<SessionEnv> {
  const { busyPolicy, runTimeoutMs, maxTurns } = scenario;
  return {
    machine: traversalSessionMachine,
    input: { sessionId: 's', limits: { ...SESSION_LIMITS, runTimeoutMs }, accepted: {}, reloadRequired: false, busyPolicy, queue: [], trackers: FRESH_TRACKERS },
    env: { turn: 'none', turns: 0, checkpoint: false, compactable: false, stopped: false },
    events: (state) => [...commands(state, maxTurns), ...turnEvents(state), ...clockEvents(state), ...effectReplies(state)],
    nextEnv: (env, event, before, after) => ({
      turn: nextTurn(env, event, before, after),
      turns: Object.keys(ctx(after).accepted).length,
      checkpoint: env.checkpoint || compacted(before, event),
      compactable: (env.compactable && !compacted(before, event)) || startedTurn(before, after),
      stopped: env.stopped || event.type === 'session.stop',
    }),
    key: ({ machine, env }) => {
      const c = ctx(machine);
      const waiting = machine.matches('maintaining') || machine.matches('finishing') ? pendingEffectOf(machine) : null;
      return JSON.stringify([machine.value, c.reloadRequired, c.activeTurn !== null, c.pendingPermission !== null, c.queue.length, waiting, env]);
    },
    // A path ends when the session is idle with nothing in flight, or once a stop has closed it.
    isEnd: ({ machine, env }) => machine.status === 'done' || (machine.matches('idle') && env.turn === 'none'),
  };
}
