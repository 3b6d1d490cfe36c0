import { assign, type AnyMachineSnapshot, type EventObject } from 'xstate';
import { turnMachine, type TurnContext } from '../../machines/turn.machine.js';
import { DEFAULT_GUARDRAILS, FRESH_TRACKER, FRESH_TRACKERS } from '../../machines/guardrails.js';
import type { ToolCallPart } from '../../src/index.js';
import { abortEffect, abortedEffectOf, forgetEffect, pendingEffectOf, recordEffect } from './recorded-effects.js';
import type { ChartModel, ModelState } from './tour.js';

/**
 * The turn chart for traversal, with its surroundings modelled. Effects are recorded by name in
 * `pendingEffect` (the runtime keeps a request id there), so a reply event names the effect it
 * answers. Whether agent mail waits is carried by the event (`mail: true`) that leads into the
 * chart's `checking` state, which is where the runtime's guard reads the mailbox; whether the
 * session is held there (a task pausing) likewise (`hold: true`). Whether a run of
 * reads starts ahead of its calls (RL-5) is decided from the response's tool names, as the runtime
 * decides it from its toolset; the traversal records which calls' reads were started.
 */

/** The agent's limits in turn paths; the run has a time limit, which passes only when a path says so. */
export const TURN_LIMITS = { maxModelCalls: 2, doomLoopThreshold: 3, runTimeoutMs: 1_000 };

/**
 * The guarded course's agent (issue 12): no run deadline, a no-progress watchdog, a mistake breaker
 * that trips at the first step whose calls all failed, and a token budget. `GUARDED_CONFIG` is how
 * the runtime is told; `GUARDED_LIMITS` what its charts then get.
 */
export const STALL_MS = 500;
export const TOKEN_BUDGET = 50_000;
/** Usage a model call reports so that the next call would pass the budget. */
export const OVER_BUDGET_USAGE = 100_000;
export const GUARDED_CONFIG = { mistakeLimit: 1, maxTurnTokens: TOKEN_BUDGET, stallTimeoutMs: STALL_MS };
const GUARDED_LIMITS = {
  maxModelCalls: 3,
  doomLoopThreshold: 3,
  runTimeoutMs: null,
  guardrails: { ...DEFAULT_GUARDRAILS, ...GUARDED_CONFIG },
};

/**
 * Issue 25: the guarded course's session belongs to `PATH_PRINCIPAL`, who may spend
 * `PATH_DAILY_TOKENS` a day: more than any path's calls report, so only a path that starts with the
 * budget spent (`beginTurn` reports it, and the director spends it first) ends `budget_exhausted`.
 */
export const PATH_PRINCIPAL = 'path-user';
export const PATH_DAILY_TOKENS = 1_000_000_000_000;
const SPENT_BUDGET = { principal: PATH_PRINCIPAL, limit: PATH_DAILY_TOKENS, spent: PATH_DAILY_TOKENS, resetsAtMs: 0 };

/** Whether the path's turn starts with its principal's daily budget spent. */
export function startsWithBudgetSpent(path: readonly { event: EventObject }[]): boolean {
  return (path[0]?.event as { output?: { principalBudget?: unknown } } | undefined)?.output?.principalBudget !== undefined;
}

/** The no-progress watchdog's time-out, as the turn gets it. */
export const STALL = { type: 'turn.interrupt', reason: 'timeout', limit: 'stall' };

/**
 * A course of turn paths: the agent's settings, and which responses its model gives. `serial` has
 * parallel tool calls off and walks the whole loop, with calls whose tools the director picks from
 * what the path does with them; `parallel` (RL-5) has them on, with a bound of 2, and its first
 * response names its tools: a run of reads at the start, a run after a call that asks for approval,
 * a run of four (two wait for a slot), a run holding a read whose schema throws. Its course up to
 * that response is the plain one (the serial course walks the rest), and its second response ends
 * the turn; from the response on, every interrupt, tool result, approval and failed write the
 * serial course allows is allowed (agent mail aside).
 */
export interface TurnScenario {
  name: 'serial' | 'parallel' | 'guarded';
  /** The agent's `parallelToolCalls`: null leaves it off. */
  parallelToolCalls: number | null;
}

/**
 * The guarded course (issue 12) walks the guardrails: its responses name their tools (none, a read,
 * a write that asks for approval), a read succeeds or fails, a step whose call failed trips the
 * mistake breaker (whose callback continues, stops or throws), a response may report usage that
 * puts the next call over the token budget (whose last call answers or still asks for tools), and
 * the watchdog may find no progress while the model or a read runs, or while the callback decides.
 * Interrupts come only there and while the callback decides; the other courses walk the rest.
 */
export const TURN_SCENARIOS: TurnScenario[] = [
  { name: 'serial', parallelToolCalls: null },
  { name: 'parallel', parallelToolCalls: 2 },
  { name: 'guarded', parallelToolCalls: null },
];

export function turnLimitsOf(scenario: TurnScenario) {
  return scenario.name === 'guarded' ? GUARDED_LIMITS : TURN_LIMITS;
}

/** A call of the serial course: its tool is picked by the director from what the path does with it. */
export const ANY_TOOL = 'any';

/**
 * The path tools (stage.ts) as RL-5 sees them: the reads with no `authorize` hook may be started
 * ahead. The schema of `exploding` throws, so its arguments never pass: a run is started up to it.
 */
const PARALLEL_READS = new Set(['read_file', 'exploding']);

/** The first responses of the parallel course, by tool name. */
const PARALLEL_RESPONSES = [
  ['read_file', 'read_file'],
  ['read_file', 'read_file', 'read_file', 'read_file'],
  ['write_file', 'read_file', 'read_file'],
  ['read_file', 'exploding'],
];

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

/** The traversal's context: the chart's, the calls whose reads were started ahead (RL-5), and how many runs were. */
type WalkedContext = TurnContext & { startedReads?: string[]; runsStarted?: number };

const ctx = (s: AnyMachineSnapshot) => s.context as WalkedContext;
const startedOf = (c: WalkedContext) => c.startedReads ?? [];

/** As `ParallelReads` decides: the calls from `from` that qualify, in a row (none started yet). */
function runFrom(c: WalkedContext, from: number): ToolCallPart[] {
  const calls = c.response?.toolCalls ?? [];
  let end = from;
  while (end < calls.length && PARALLEL_READS.has(calls[end]!.name) && !startedOf(c).includes(calls[end]!.id)) end += 1;
  return calls.slice(from, end);
}

/**
 * What `startParallelReads` starts: the run from the current call, up to the first whose arguments
 * fail (`exploding`). The doom loop never stops one here: every call of a path has its own path argument.
 */
function startedRun(c: WalkedContext): string[] {
  const run = runFrom(c, c.toolIndex);
  const invalid = run.findIndex((call) => call.name === 'exploding');
  return (invalid === -1 ? run : run.slice(0, invalid)).map((call) => call.id);
}

/** The step took a branch that starts a run of reads (`startParallelReads`). */
export function startsReads(step: { state: { machine: AnyMachineSnapshot }; next: { machine: AnyMachineSnapshot } }): boolean {
  return (ctx(step.next.machine).runsStarted ?? 0) > (ctx(step.state.machine).runsStarted ?? 0);
}

/** The turn chart for traversal, with the parallel-read guards deciding as the runtime does for `scenario`. */
function traversalTurnMachine(scenario: TurnScenario) {
  const parallel = scenario.parallelToolCalls !== null && scenario.parallelToolCalls > 1;
  return turnMachine.provide({
    actions: {
      requestEffect: recordEffect,
      cancelEffect: forgetEffect,
      abortEffect,
      emitPhase: () => undefined,
      discardDraft: () => undefined,
      emitGuardrailTriggered: () => undefined,
      startParallelReads: assign(({ context }: { context: WalkedContext }) => ({
        startedReads: [...startedOf(context), ...startedRun(context)],
        runsStarted: (context.runsStarted ?? 0) + 1,
      })) as never,
    },
    guards: {
      mailboxHasMessages: ({ event }: { event: EventObject }) => (event as { mail?: boolean }).mail === true,
      holdRequested: ({ event }: { event: EventObject }) => (event as { hold?: boolean }).hold === true,
      callsReadInParallel: ({ context }: { context: WalkedContext }) => parallel && runFrom(context, context.toolIndex).length >= 2,
      nextCallsReadInParallel: ({ context }: { context: WalkedContext }) => parallel && runFrom(context, context.toolIndex + 1).length >= 2,
      // The scenarios' calls need no approval: no approval batch opens (issue 30's batches are tested in parallel-writes.test.ts).
      opensApprovalBatch: () => false,
      nextOpensApprovalBatch: () => false,
    },
  });
}

const callCount = (c: TurnContext) => c.response?.toolCalls.length ?? 0;
/** The tool the current call names: `ANY_TOOL` in the serial course. */
const currentTool = (c: TurnContext) => c.response?.toolCalls[c.toolIndex]?.name ?? ANY_TOOL;

export const DONE_CHILD = 'xstate.done.actor.toolCall';
export const ERROR_CHILD = 'xstate.error.actor.toolCall';

type Termination = null | 'cancelled' | 'failed';
const childDone = (termination: Termination, mail = false, status: 'succeeded' | 'failed' = 'succeeded') => ({
  type: DONE_CHILD,
  mail,
  output: {
    toolCallId: 'call',
    result: { status, content: '' },
    termination: termination === null ? null : termination === 'cancelled' ? { kind: 'cancelled' } : { kind: 'failed', code: 'persistence_error', message: '' },
    loop: FRESH_TRACKER,
    cleared: null,
  },
});

/** The result a path gives the call (a failed one counts for the mistake breaker). */
export function resultStatusOf(event: EventObject): 'succeeded' | 'failed' {
  return (event as { output?: { result?: { status?: string } } }).output?.result?.status === 'failed' ? 'failed' : 'succeeded';
}

/** The error of an effect that stopped because the chart aborted it (`abortEffect`). */
export const ABORTED = { aborted: true };

/**
 * A response of model call `index` calling `tools` (the director gives each call its own path
 * argument; ids are unique within the turn, as the runtime's are).
 */
export function modelResponse(index: number, tools: readonly string[]) {
  return {
    text: 'answer',
    reasoning: '',
    toolCalls: tools.map((name, i) => ({ id: `m${index}c${i}`, name, argumentsText: JSON.stringify({ path: `m${index}c${i}` }) })),
  };
}

/** What `prepareRequest` reports in the guarded course: under the budget, or (`over`) a turn whose calls reported enough to pass it. */
export const prepared = (over: boolean) => ({ overLine: false, turnTokens: over ? OVER_BUDGET_USAGE : 0, nextCallTokens: 1 });

function guardedReplies(state: ModelState<TurnEnv>): EventObject[] {
  const c = ctx(state.machine);
  const id = pendingEffectOf(state.machine);
  const done = (extra: object = {}) => ({ type: 'effect.done', id, output: undefined, ...extra });
  switch (id) {
    // The principal's daily budget may be spent as the turn starts (issue 25).
    case 'beginTurn':
      return [done(), done({ output: { principalBudget: SPENT_BUDGET } })];
    case 'writeAssistant':
    case 'skipToolCalls':
      return [done()];
    case 'prepareRequest':
      // Over the budget only once a call reported usage, and only until the last call is under way.
      return [done({ output: prepared(false) }), ...(c.response !== null && !c.concluding ? [done({ output: prepared(true) })] : [])];
    case 'callModel': {
      const responses = c.response === null && !c.concluding ? [[], ['read_file'], ['write_file']] : [[], ['read_file']];
      return responses.map((tools) => done({ output: modelResponse(c.modelCallIndex, tools) }));
    }
    case 'consultMistakeLimit': {
      const failed = { type: 'effect.failed', id, error: abortedEffectOf(state.machine) === id ? ABORTED : { code: 'mistake_limit' } };
      return [done({ output: { action: 'continue' } }), done({ output: { action: 'stop', message: 'stopped by the callback' } }), failed];
    }
    default:
      return [];
  }
}

/** The guarded course's interrupts: any while the callback decides, the watchdog's while the model is called. */
function guardedCommands(state: ModelState<TurnEnv>): EventObject[] {
  if (ctx(state.machine).interrupt !== null) return [];
  if (state.machine.matches({ running_model: 'consulting' })) return commands.map((c) => (c.reason === 'timeout' ? STALL : c));
  return state.machine.matches({ running_model: 'calling' }) ? [STALL] : [];
}

/** A call of the guarded course: a read succeeds or fails (or the watchdog stops it), a write asks first. */
function guardedChildEvents({ machine, env }: ModelState<TurnEnv>): Array<EventObject & Record<string, unknown>> {
  const c = ctx(machine);
  switch (env.child) {
    case 'fresh':
      if (currentTool(c) === 'write_file') return [{ type: 'tool.permission_requested', toolCallId: 'call', name: 'write_file', paths: [] }];
      return [childDone(null), childDone(null, false, 'failed'), ...(c.interrupt === null ? [STALL] : [])];
    case 'approved':
      return [childDone(null)];
    case 'asking':
      return (['allow_once', 'deny'] as const).map((decision) => ({ type: 'turn.resolve_permission', toolCallId: c.pendingPermission, decision }));
    case 'allow':
    case 'deny':
      return [{ type: 'tool.permission_settled', toolCallId: c.pendingPermission }];
    case 'denied':
      return [childDone('failed')];
    case 'cancel':
      return [childDone('cancelled')];
    default:
      return [];
  }
}

function effectReplies(state: ModelState<TurnEnv>, scenario: TurnScenario): EventObject[] {
  const c = ctx(state.machine);
  const id = pendingEffectOf(state.machine);
  const done = (extra: object = {}) => ({ type: 'effect.done', id, output: undefined, ...extra });
  const failed = (error: object = {}) => ({ type: 'effect.failed', id, error });
  const aborted = abortedEffectOf(state.machine) === id;
  const parallel = scenario.name === 'parallel';
  switch (id) {
    // A hold asked for while the turn starts stops it at its first checkpoint (a task pausing).
    case 'beginTurn':
      return parallel ? [done()] : [done(), done({ mail: true }), done({ hold: true }), failed()];
    case 'awaitRelease':
      return [done()];
    case 'drainMailbox':
      return [done(), failed()];
    case 'writeAssistant':
      return parallel ? [done()] : [done(), failed()];
    case 'skipToolCalls':
      // Only a write can fail, and with no call left to skip nothing is written.
      return c.toolIndex < callCount(c) ? [done(), failed()] : [done()];
    // An interrupt aborted the sampling: it still succeeds if it had passed its last check, or it
    // stops (after the write under way, if any) and fails as aborted.
    case 'prepareRequest':
      if (parallel) return [done({ output: { overLine: false } })];
      return [...overLineChoices(state).map((overLine) => done({ output: { overLine } })), aborted ? failed(ABORTED) : failed({ code: 'project_instruction_error' })];
    // An interrupt aborted the summary call: the checkpoint may still be stored (it was past the call),
    // or the call stops and the compaction fails as aborted.
    case 'compact':
      return [done({ output: { compactionId: 'k' }, big: false }), done({ output: { compactionId: 'k' }, big: true }), failed({ reloadRequired: true }), failed(aborted ? ABORTED : {})];
    case 'callModel':
      // The parallel course: its first response holds a run of reads; the next ends the turn.
      if (parallel) return (c.response === null ? PARALLEL_RESPONSES : [[]]).map((tools) => done({ output: modelResponse(c.modelCallIndex, tools) }));
      return [
        ...[0, 1, 2].map((n) => done({ output: modelResponse(c.modelCallIndex, Array<string>(n).fill(ANY_TOOL)) })),
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
const commands = [
  { type: 'turn.interrupt', reason: 'cancel' },
  { type: 'turn.interrupt', reason: 'timeout', limit: 'run' },
  { type: 'turn.interrupt', reason: 'stop' },
];

/**
 * The events of the current call. In the serial course the director picks its tool, so any of them
 * can happen; in the parallel course its tool is named: a read runs and answers (and never asks),
 * `write_file` asks for approval first, `exploding` crashes its chart. Agent mail arrives during a
 * call in the serial course only.
 */
function childEvents({ machine, env }: ModelState<TurnEnv>): Array<EventObject & Record<string, unknown>> {
  const c = ctx(machine);
  const settle = { type: 'tool.permission_settled', toolCallId: c.pendingPermission };
  const live = c.interrupt === null ? commands : [];
  const tool = currentTool(c);
  const mail = tool === ANY_TOOL;
  switch (env.child) {
    case 'fresh':
      if (tool === 'read_file') return [...doneChoices([null, 'cancelled', 'failed'], mail), ...live];
      if (tool === 'write_file') return [{ type: 'tool.permission_requested', toolCallId: 'call', name: 'write_file', paths: [] }, ...live];
      if (tool === 'exploding') return [{ type: ERROR_CHILD, error: new Error('the tool schema threw') }];
      return [
        { type: 'tool.permission_requested', toolCallId: 'call', name: 'write_file', paths: [] },
        { type: ERROR_CHILD, error: new Error('the tool schema threw') },
        ...doneChoices([null, 'cancelled', 'failed'], mail),
        ...live,
      ];
    case 'approved':
      return [...doneChoices([null, 'cancelled', 'failed'], mail), ...live];
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
      return doneChoices(['failed'], mail);
    case 'cancelled':
      return doneChoices(['cancelled'], mail);
    // A cancel that reaches the call while its tool runs ends it cancelled; one that arrives
    // while its result is being written finds nothing to stop, and the turn notices at `next`.
    case 'cancel':
      return doneChoices(['cancelled', null], mail);
    case 'stop':
      return doneChoices(['failed', null], mail);
  }
}

function doneChoices(terminations: Termination[], mail: boolean): Array<EventObject & Record<string, unknown>> {
  return terminations.flatMap((t) => (mail ? [childDone(t), childDone(t, true)] : [childDone(t)]));
}

function nextChild(child: ChildPhase, event: EventObject, tool: string): ChildPhase {
  const e = event as { type: string; decision?: string; reason?: string };
  // A named write that has not asked yet is still with its `authorize` hook: an interrupt ends it before it runs.
  const beforeAsking = child === 'fresh' && tool === 'write_file';
  switch (e.type) {
    case 'tool.permission_requested':
      return 'asking';
    case 'turn.resolve_permission':
      return e.decision === 'allow_once' ? 'allow' : 'deny';
    case 'tool.permission_settled':
      return ({ allow: 'approved', deny: 'denied', cancel_asking: 'cancelled', stop_asking: 'stopped' } as Record<string, ChildPhase>)[child] ?? child;
    // The time limit cancels the running call as the user would (with its own reason); a stop stops it.
    case 'turn.interrupt':
      if (e.reason === 'stop') {
        if (beforeAsking) return 'stopped';
        return child === 'asking' ? 'stop_asking' : child === 'fresh' || child === 'approved' ? 'stop' : child;
      }
      if (beforeAsking) return 'cancelled';
      return child === 'asking' ? 'cancel_asking' : child === 'fresh' || child === 'approved' ? 'cancel' : child;
    case DONE_CHILD:
    case ERROR_CHILD:
    case 'effect.done':
      return 'fresh';
    default:
      return child;
  }
}

/** The turn chart and its surroundings in one course. */
export function turnModel(scenario: TurnScenario): ChartModel<TurnEnv> {
  const parallel = scenario.name === 'parallel';
  return {
    machine: traversalTurnMachine(scenario),
    input: { sessionId: 's', turnId: 't', limits: turnLimitsOf(scenario), trackers: FRESH_TRACKERS },
    env: { child: 'fresh', stickyOver: false, bigSummary: false },
    events: (state) => {
      if (scenario.name === 'guarded') {
        if (state.machine.matches({ running_tools: 'tool_call' })) return guardedChildEvents(state);
        return [...guardedReplies(state), ...guardedCommands(state)];
      }
      if (state.machine.matches({ running_tools: 'tool_call' })) return childEvents(state);
      const replies = effectReplies(state, scenario);
      // The parallel course interrupts only where reads can be started or running: from its response on.
      if (parallel && !(state.machine.matches({ running_model: 'writing_response' }) && callCount(ctx(state.machine)) > 0)) return replies;
      return [...replies, ...commands];
    },
    nextEnv: (env, event, before) => {
      const e = event as { type: string; big?: boolean; output?: { overLine?: boolean } };
      // Before the first response of the turn only the user's own message can be over the line.
      const firstPrepare = pendingEffectOf(before) === 'prepareRequest' && !ctx(before).compactedThisCall && ctx(before).response === null;
      return {
        child: nextChild(env.child, event, currentTool(ctx(before))),
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
        // The calls still to come: their tools, and whether their reads were started ahead.
        (c.response?.toolCalls ?? []).slice(c.toolIndex).map((call) => [call.name, startedOf(c).includes(call.id)]),
        c.termination?.kind ?? null,
        c.pendingPermission !== null,
        c.outcome?.status ?? null,
        // The guardrails' state (issue 12).
        c.mistakes,
        c.step.failed,
        c.step.succeeded,
        c.concluding,
        env,
      ]);
    },
  };
}
