import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { sessionMachine, type SessionContext } from '../../machines/session.machine.js';
import { pendingEffectOf, recordEffect } from './recorded-effects.js';
import type { ChartModel, ModelState } from './tour.js';

/**
 * The session chart for traversal. Its own events are commands, which a path issues; the rest come
 * from the turn it runs (an approval request, the end of the turn, a checkpoint that could not be
 * installed) and from its effects. The environment keeps what the turn is doing, so a path never
 * asks for a turn event the turn cannot send.
 */

/** The active turn's course, as the session sees it. */
export type TurnCourse = 'none' | 'working' | 'asking' | 'answered' | 'ending_asking' | 'ending' | 'reloading';

export interface SessionEnv {
  turn: TurnCourse;
  /** Turns accepted so far (at most two, which bounds the graph). */
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
  },
});

const ctx = (s: AnyMachineSnapshot) => s.context as SessionContext;
export const DONE_TURN = 'xstate.done.actor.turn';
export const UNKNOWN_TURN = 'turn_unknown';

function startTurn(c: SessionContext, env: SessionEnv): EventObject[] {
  const events: EventObject[] = [];
  if (env.turns < 2) events.push({ type: 'session.start_turn', commandId: '', turnId: `t${env.turns + 1}`, clientRequestId: `c${env.turns + 1}` } as EventObject);
  if (env.turns > 0) events.push({ type: 'session.start_turn', commandId: '', turnId: 'dup', clientRequestId: 'c1' } as EventObject);
  return c.reloadRequired ? events.slice(0, 1) : events;
}

function commands({ machine, env }: ModelState<SessionEnv>): EventObject[] {
  if (env.stopped) return [];
  const c = ctx(machine);
  const active = c.activeTurn?.turnId ?? UNKNOWN_TURN;
  const live = env.turn === 'working' || env.turn === 'asking';
  const events: Array<EventObject & Record<string, unknown>> = [
    ...startTurn(c, env),
    { type: 'session.cancel_turn', commandId: '', turnId: UNKNOWN_TURN },
    { type: 'session.resolve_permission', commandId: '', turnId: UNKNOWN_TURN, toolCallId: 'nope', decision: 'deny' },
    { type: 'session.compact', commandId: '' },
    { type: 'session.rewind', commandId: '', compactionId: 'k' },
    { type: 'session.reload', commandId: '' },
  ];
  if (c.activeTurn) events.push({ type: 'session.resolve_permission', commandId: '', turnId: active, toolCallId: 'nope', decision: 'deny' });
  if (live) events.push({ type: 'session.cancel_turn', commandId: '', turnId: active });
  events.push({ type: 'session.stop', commandId: '' });
  if (env.turn === 'asking') events.push({ type: 'session.resolve_permission', commandId: '', turnId: active, toolCallId: c.pendingPermission?.toolCallId, decision: 'deny' });
  return events;
}

function turnEvents({ env }: ModelState<SessionEnv>): EventObject[] {
  const done = { type: DONE_TURN, output: { status: 'completed', finalText: '' } };
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

function nextTurn(env: SessionEnv, event: EventObject & { turnId?: string }, before: AnyMachineSnapshot, after: AnyMachineSnapshot): TurnCourse {
  const { turn } = env;
  switch (event.type) {
    case 'session.start_turn':
      return before.matches('idle') && after.matches('running') ? 'working' : turn;
    case 'turn.permission_requested':
      return 'asking';
    case 'session.resolve_permission':
      return turn === 'asking' && event.turnId !== UNKNOWN_TURN && (event as { toolCallId?: string }).toolCallId !== 'nope' ? 'answered' : turn;
    case 'session.cancel_turn':
    case 'session.stop':
      if (event.type === 'session.cancel_turn' && event.turnId === UNKNOWN_TURN) return turn;
      return turn === 'asking' ? 'ending_asking' : turn === 'working' ? 'ending' : turn;
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

export const sessionModel: ChartModel<SessionEnv> = {
  machine: traversalSessionMachine,
  input: { sessionId: 's', limits: { maxModelCalls: 5, doomLoopThreshold: 3, runTimeoutMs: null }, accepted: {}, reloadRequired: false, busyPolicy: 'reject', queue: [] },
  env: { turn: 'none', turns: 0, checkpoint: false, compactable: false, stopped: false },
  events: (state) => [...commands(state), ...turnEvents(state), ...effectReplies(state)],
  nextEnv: (env, event, before, after) => ({
    turn: nextTurn(env, event, before, after),
    turns: env.turns + (before.matches('idle') && after.matches('running') ? 1 : 0),
    checkpoint: env.checkpoint || compacted(before, event),
    compactable: (env.compactable && !compacted(before, event)) || (before.matches('idle') && after.matches('running')),
    stopped: env.stopped || event.type === 'session.stop',
  }),
  key: ({ machine, env }) => {
    const c = ctx(machine);
    const waiting = machine.matches('maintaining') || machine.matches('finishing') ? pendingEffectOf(machine) : null;
    return JSON.stringify([machine.value, c.reloadRequired, c.activeTurn !== null, c.pendingPermission !== null, waiting, env]);
  },
  // The session has no final state: a path ends when the session is idle with nothing in flight.
  isEnd: ({ machine, env }) => machine.matches('idle') && env.turn === 'none',
};
