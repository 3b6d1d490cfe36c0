import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { turnMachine, type TurnContext } from '../../machines/turn.machine.js';
import { abortEffect, abortedEffectOf, forgetEffect, pendingEffectOf, recordEffect } from './recorded-effects.js';
import type { ChartModel, ModelState } from './tour.js';

/**
 * The turn chart for traversal, with its surroundings modelled. Effects are recorded by name in
 * `pendingEffect` (the runtime keeps a request id there), so a reply event names the effect it
 * answers. Whether agent mail waits is carried by the event (`mail: true`) that leads into the
 * chart's `checking` state, which is where the runtime's guard reads the mailbox.
 */

/** The agent's limits in turn paths; the run has a time limit, which passes only when a path says so. */
export const TURN_LIMITS = { maxModelCalls: 2, doomLoopThreshold: 3, runTimeoutMs: 1_000 };

/** How far the current tool call has got, as far as the turn can tell. */
export type ChildPhase =
  | 'fresh' // executing; may still ask for approval or fail validation
  | 'approved' // executing after an approval
  | 'asking' // waiting for the user
  | 'allow' | 'deny' | 'cancel_asking' | 'stop_asking' // answered; the call leaves waiting_permission next
  | 'denied' | 'cancelled' | 'stopped' // will end with that termination
  | 'cancel' | 'stop'; // a cancel (the user's or the time limit's) or a stop reached the call while it ran

export interface TurnEnv {
  child: ChildPhase;
  /** The user's own message is over the auto-compact line: no compaction can get under it. */
  stickyOver: boolean;
  /** The last compaction's summary alone is over the line. */
  bigSummary: boolean;
}

export const traversalTurnMachine = turnMachine.provide({
  actions: {
    requestEffect: recordEffect,
    cancelEffect: forgetEffect,
    abortEffect,
    emitPhase: () => undefined,
    discardDraft: () => undefined,
  },
  guards: {
    mailboxHasMessages: ({ event }: { event: EventObject }) => (event as { mail?: boolean }).mail === true,
  },
});

const ctx = (s: AnyMachineSnapshot) => s.context as TurnContext;
const callCount = (c: TurnContext) => c.response?.toolCalls.length ?? 0;

export const DONE_CHILD = 'xstate.done.actor.toolCall';
export const ERROR_CHILD = 'xstate.error.actor.toolCall';

type Termination = null | 'cancelled' | 'failed';
const childDone = (termination: Termination, mail = false) => ({
  type: DONE_CHILD,
  mail,
  output: {
    toolCallId: 'call',
    result: { status: 'succeeded', content: '' },
    termination: termination === null ? null : termination === 'cancelled' ? { kind: 'cancelled' } : { kind: 'failed', code: 'persistence_error', message: '' },
    doom: { signature: null, count: 0 },
  },
});

/** The error of an effect that stopped because the chart aborted it (`abortEffect`). */
export const ABORTED = { aborted: true };

export function modelResponse(calls: number) {
  return { text: 'answer', reasoning: '', toolCalls: Array.from({ length: calls }, (_, i) => ({ id: `c${i}`, name: 'read_file', argumentsText: '{}' })) };
}

function effectReplies(state: ModelState<TurnEnv>): EventObject[] {
  const c = ctx(state.machine);
  const id = pendingEffectOf(state.machine);
  const done = (extra: object = {}) => ({ type: 'effect.done', id, output: undefined, ...extra });
  const failed = (error: object = {}) => ({ type: 'effect.failed', id, error });
  const aborted = abortedEffectOf(state.machine) === id;
  switch (id) {
    case 'beginTurn':
      return [done(), done({ mail: true }), failed()];
    case 'drainMailbox':
    case 'writeAssistant':
      return [done(), failed()];
    case 'skipToolCalls':
      // Only a write can fail, and with no call left to skip nothing is written.
      return c.toolIndex < callCount(c) ? [done(), failed()] : [done()];
    // An interrupt aborted the sampling: it still succeeds if it had passed its last check, or it
    // stops (after the write under way, if any) and fails as aborted.
    case 'prepareRequest':
      return [...overLineChoices(state).map((overLine) => done({ output: { overLine } })), aborted ? failed(ABORTED) : failed({ code: 'project_instruction_error' })];
    // An interrupt aborted the summary call: the checkpoint may still be stored (it was past the call),
    // or the call stops and the compaction fails as aborted.
    case 'compact':
      return [done({ output: { compactionId: 'k' }, big: false }), done({ output: { compactionId: 'k' }, big: true }), failed({ reloadRequired: true }), failed(aborted ? ABORTED : {})];
    case 'callModel':
      return [
        ...[0, 1, 2].map((n) => done({ output: modelResponse(n) })),
        ...[{ kind: 'overflow' }, { kind: 'overflow', semanticOutputProduced: true }, { kind: 'provider' }, { kind: 'protocol' }].map(failed),
      ];
    default:
      return [];
  }
}

/** Which `overLine` answers the conversation can give here. */
function overLineChoices({ machine, env }: ModelState<TurnEnv>): boolean[] {
  const c = ctx(machine);
  if (env.stickyOver) return [true];
  if (c.compactedThisCall) return [env.bigSummary];
  // Before any tool result only the user's own message can make it big, and that stays big.
  return [false, true];
}

/** What can end a turn early: the user's cancel, the run's time limit (RL-3), the session stopping. */
const commands = [{ type: 'turn.cancel' }, { type: 'turn.timeout' }, { type: 'turn.stop' }];

function childEvents({ machine, env }: ModelState<TurnEnv>): Array<EventObject & Record<string, unknown>> {
  const c = ctx(machine);
  const settle = { type: 'tool.permission_settled', toolCallId: c.pendingPermission };
  const live = c.interrupt === null ? commands : [];
  switch (env.child) {
    case 'fresh':
      return [
        { type: 'tool.permission_requested', toolCallId: 'call', name: 'write_file', paths: [] },
        { type: ERROR_CHILD, error: new Error('the tool schema threw') },
        ...doneChoices([null, 'cancelled', 'failed']),
        ...live,
      ];
    case 'approved':
      return [...doneChoices([null, 'cancelled', 'failed']), ...live];
    case 'asking':
      return [
        { type: 'turn.resolve_permission', toolCallId: c.pendingPermission, decision: 'allow_once' },
        { type: 'turn.resolve_permission', toolCallId: c.pendingPermission, decision: 'deny' },
        ...live,
      ];
    case 'allow':
    case 'deny':
    case 'cancel_asking':
    case 'stop_asking':
      return [settle];
    case 'denied':
    case 'stopped':
      return doneChoices(['failed']);
    case 'cancelled':
      return doneChoices(['cancelled']);
    // A cancel that reaches the call while its tool runs ends it cancelled; one that arrives
    // while its result is being written finds nothing to stop, and the turn notices at `next`.
    case 'cancel':
      return doneChoices(['cancelled', null]);
    case 'stop':
      return doneChoices(['failed', null]);
  }
}

function doneChoices(terminations: Termination[]): Array<EventObject & Record<string, unknown>> {
  return terminations.flatMap((t) => [childDone(t), childDone(t, true)]);
}

function nextChild(child: ChildPhase, event: EventObject): ChildPhase {
  const e = event as { type: string; decision?: string };
  switch (e.type) {
    case 'tool.permission_requested':
      return 'asking';
    case 'turn.resolve_permission':
      return e.decision === 'allow_once' ? 'allow' : 'deny';
    case 'tool.permission_settled':
      return ({ allow: 'approved', deny: 'denied', cancel_asking: 'cancelled', stop_asking: 'stopped' } as Record<string, ChildPhase>)[child] ?? child;
    // The time limit cancels the running call as the user would (with its own reason).
    case 'turn.cancel':
    case 'turn.timeout':
      return child === 'asking' ? 'cancel_asking' : child === 'fresh' || child === 'approved' ? 'cancel' : child;
    case 'turn.stop':
      return child === 'asking' ? 'stop_asking' : child === 'fresh' || child === 'approved' ? 'stop' : child;
    case DONE_CHILD:
    case ERROR_CHILD:
    case 'effect.done':
      return 'fresh';
    default:
      return child;
  }
}

export const turnModel: ChartModel<TurnEnv> = {
  machine: traversalTurnMachine,
  input: { sessionId: 's', turnId: 't', limits: TURN_LIMITS },
  env: { child: 'fresh', stickyOver: false, bigSummary: false },
  events: (state) => {
    if (state.machine.matches({ running_tools: 'tool_call' })) return childEvents(state);
    return [...effectReplies(state), ...commands];
  },
  nextEnv: (env, event, before) => {
    const e = event as { type: string; big?: boolean; output?: { overLine?: boolean } };
    // Before the first response of the turn only the user's own message can be over the line.
    const firstPrepare = pendingEffectOf(before) === 'prepareRequest' && !ctx(before).compactedThisCall && ctx(before).response === null;
    return {
      child: nextChild(env.child, event),
      stickyOver: env.stickyOver || (firstPrepare && e.output?.overLine === true),
      bigSummary: pendingEffectOf(before) === 'compact' && e.type === 'effect.done' ? e.big === true : env.bigSummary,
    };
  },
  key: ({ machine, env }) => {
    const c = ctx(machine);
    return JSON.stringify([
      machine.value,
      machine.status,
      pendingEffectOf(machine),
      abortedEffectOf(machine),
      c.interrupt,
      c.compactedThisCall,
      c.overflowRetried,
      c.modelCallIndex,
      c.toolIndex,
      callCount(c),
      c.termination?.kind ?? null,
      c.pendingPermission !== null,
      c.outcome?.status ?? null,
      env,
    ]);
  },
};
