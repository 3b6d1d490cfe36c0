import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { afterWait, defaultLoopRules, FRESH_TRACKER, observeCall, passWait, type LoopRules, type LoopTracker } from '../../machines/guardrails.js';
import { isDelegationTool } from '../../machines/delegation.js';
import { toolCallChart, type ToolCallContext } from '../../machines/tool-call.machine.js';
import type { PermissionMode } from '../../src/index.js';
import type { MatchedRule, RuleDecision } from '../../src/protocol/permission-rule.js';
import { modeForbids, modeRequiresApproval } from '../../src/tools/permission-policy.js';
import type { ToolEffect } from '../../src/tools/define-tool.js';
import { forgetEffect, pendingEffectOf, recordEffect } from './recorded-effects.js';
import type { ChartModel } from './tour.js';

/**
 * The tool-call chart for traversal. What the runtime decides from its toolset and the session's
 * mode is decided here from the scenario a call starts in: which tool the name picks, the
 * arguments, the permission mode, how many identical calls came before. Each scenario is walked
 * on its own; together they reach every branch of the chart.
 */

/** The tools the paths use: the runtime's control tool and three registry tools, one per effect. */
export const PATH_TOOLS: Record<string, { effect: ToolEffect; hook: boolean } | 'control'> = {
  update_plan: 'control',
  switch_agent: 'control',
  read_file: { effect: 'read', hook: false },
  write_file: { effect: 'write', hook: true },
  run_cmd: { effect: 'execute', hook: false },
};

export const DOOM_THRESHOLD = 2;

/** The loop rules of a scenario: the stop at `DOOM_THRESHOLD`, or (`hint`) a hint at 2 and the stop at 3 (GR-1). */
export function loopRulesOf(scenario: ToolCallScenario): LoopRules {
  return scenario.hint ? { ...defaultLoopRules(DOOM_THRESHOLD + 1), soft: DOOM_THRESHOLD } : defaultLoopRules(DOOM_THRESHOLD);
}

export interface ToolCallScenario {
  name: string;
  argumentsText: string;
  mode: PermissionMode;
  /** The same call was made just before, so this one reaches the doom-loop threshold. */
  repeated: boolean;
  /** RL-4: the runtime has `beforeToolDispatch` and `afterToolDispatch` hooks. */
  hooks?: boolean;
  /** The agent hints one call before it stops (GR-1): the repeated call reaches the hint instead, and runs. */
  hint?: boolean;
  /** The session cannot ask for approvals (a sub-agent's): what would ask is denied. */
  nonInteractive?: boolean;
  /** Sub-agents: whether the agent may delegate (to `helper`, one live child per turn). */
  delegation?: 'allowed' | 'forbidden';
  /** A `spawn_agent` of another task comes first in the same response: the target spawn is one child too many. */
  limit?: boolean;
  /**
   * `wait_agent` on a real child (a `helper` spawned in the response before, which answers only when
   * the path says): the wait times out or gets the answer. With `repeated`, a wait that timed out
   * comes first, so the target's timeout is the one that reaches the stop (RT-14).
   */
  child?: boolean;
  /** Issue 24: a permission rule for the target's tool name (the runtime gets `permissions: { [name]: rule }`). */
  rule?: RuleDecision;
  /**
   * Issue 30: the agent's retry policy (`RETRY_POLICY`, two runs at most): after the last timeout the
   * loop goes on (`continue`) or the turn ends (`end`).
   */
  retry?: 'continue' | 'end';
}

/** Issue 30: the paths' retry policy; the director makes a run time out on the tool's real time limit, and passes the backoff on the chart clock. */
export const RETRY_POLICY = { maxAttempts: 2, backoffMs: 1_000, on: ['timeout', 'transient'] as ('timeout' | 'transient')[] };
/** The backoff's delayed event, as the paths name it. */
export const RETRY_BACKOFF = 'xstate.after.retryBackoff.toolCall.active.retrying';

const PATH = '{"path":"a.txt"}';
const PLAN = JSON.stringify({ plan: [{ step: 'read', status: 'in_progress' }] });
/** The path stage's agents switch between `default` and `other` (test/paths/stage.ts). */
const SWITCH = JSON.stringify({ agent: 'other', reason: 'path' });
export const SPAWN = JSON.stringify({ agent: 'helper', task: 'help' });
export const SPAWN_FIRST = JSON.stringify({ agent: 'helper', task: 'help first' });
/** The child's id is known only once it is spawned: the director puts it in place of this. */
export const CHILD_ID = 'CHILD';
export const WAIT_MS = 1_000;

export const TOOL_CALL_SCENARIOS: ToolCallScenario[] = [
  { name: 'read_file', argumentsText: 'not json', mode: 'ask', repeated: false },
  { name: 'no_such_tool', argumentsText: PATH, mode: 'ask', repeated: false },
  { name: 'read_file', argumentsText: '{"path":1}', mode: 'ask', repeated: false },
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: true },
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: true, hint: true },
  { name: 'update_plan', argumentsText: PLAN, mode: 'ask', repeated: false },
  ...(['ask', 'auto', 'read_only'] as const).flatMap((mode) =>
    ['read_file', 'write_file', 'run_cmd'].map((name) => ({ name, argumentsText: PATH, mode, repeated: false })),
  ),
  // RL-4: with dispatch hooks, each way on after them (the tool's `authorize`, mode deny, mode ask, run) and the result hook.
  ...([
    ['write_file', 'ask'],
    ['run_cmd', 'read_only'],
    ['run_cmd', 'ask'],
    ['read_file', 'auto'],
  ] as const).map(([name, mode]) => ({ name, argumentsText: PATH, mode, repeated: false, hooks: true })),
  // Non-interactive approval: each place the chart would wait for an approval (the mode asks; after the hooks; the tool's `authorize` asks or allows).
  { name: 'run_cmd', argumentsText: PATH, mode: 'ask', repeated: false, nonInteractive: true },
  { name: 'write_file', argumentsText: PATH, mode: 'ask', repeated: false, nonInteractive: true },
  { name: 'run_cmd', argumentsText: PATH, mode: 'ask', repeated: false, nonInteractive: true, hooks: true },
  // Sub-agents: the delegation rules, `delegating` (spawn, send) and `waiting_agent` (unknown child, real child, the RT-14 stop).
  { name: 'spawn_agent', argumentsText: SPAWN, mode: 'ask', repeated: false, delegation: 'forbidden' },
  { name: 'spawn_agent', argumentsText: JSON.stringify({ agent: 'explorer', task: 'x' }), mode: 'ask', repeated: false, delegation: 'allowed' },
  { name: 'spawn_agent', argumentsText: SPAWN, mode: 'ask', repeated: false, delegation: 'allowed', limit: true },
  { name: 'spawn_agent', argumentsText: SPAWN, mode: 'ask', repeated: false, delegation: 'allowed' },
  { name: 'send_agent_message', argumentsText: JSON.stringify({ agentId: 'ses_nobody', text: 'hi' }), mode: 'ask', repeated: false, delegation: 'allowed' },
  { name: 'wait_agent', argumentsText: JSON.stringify({ agentId: 'ses_nobody', timeoutMs: WAIT_MS }), mode: 'ask', repeated: false, delegation: 'allowed' },
  { name: 'wait_agent', argumentsText: JSON.stringify({ agentId: CHILD_ID, timeoutMs: WAIT_MS }), mode: 'ask', repeated: false, delegation: 'allowed', child: true },
  { name: 'wait_agent', argumentsText: JSON.stringify({ agentId: CHILD_ID, timeoutMs: WAIT_MS }), mode: 'ask', repeated: true, delegation: 'allowed', child: true },
  // Issue 24: each permission rule at each place the rules and the mode decide — after screening, after
  // the dispatch hooks, after the tool's `authorize` hook allowed or asked; `allow` in `ask` mode (where
  // it matters), the others in `auto` (where only the rule can deny or ask).
  ...(['deny', 'ask', 'allow'] as const).flatMap((rule) => {
    const mode = rule === 'allow' ? 'ask' : 'auto';
    return [
      { name: 'run_cmd', argumentsText: PATH, mode, repeated: false, rule },
      { name: 'run_cmd', argumentsText: PATH, mode, repeated: false, rule, hooks: true },
      { name: 'write_file', argumentsText: PATH, mode, repeated: false, rule },
    ] satisfies ToolCallScenario[];
  }),
  // A rule's ask where nobody can answer, at each place; and an allow that does not widen `read_only`.
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: false, rule: 'ask', nonInteractive: true },
  { name: 'run_cmd', argumentsText: PATH, mode: 'auto', repeated: false, rule: 'ask', nonInteractive: true, hooks: true },
  { name: 'write_file', argumentsText: PATH, mode: 'auto', repeated: false, rule: 'ask', nonInteractive: true },
  { name: 'write_file', argumentsText: PATH, mode: 'read_only', repeated: false, rule: 'allow' },
  // Issue 30: agent.switch inside a run — to an agent the allow-list does not name, one a permission rule denies, one allowed.
  { name: 'switch_agent', argumentsText: JSON.stringify({ agent: 'helper' }), mode: 'ask', repeated: false },
  { name: 'switch_agent', argumentsText: SWITCH, mode: 'auto', repeated: false, rule: 'deny' },
  { name: 'switch_agent', argumentsText: SWITCH, mode: 'ask', repeated: false },
  // Issue 30: retries of a read (it may repeat) — the loop goes on after the last timeout, or the turn ends,
  // with the result hooks in between; a write (it may not repeat) is never run again.
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: false, retry: 'continue' },
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: false, retry: 'end' },
  { name: 'read_file', argumentsText: PATH, mode: 'auto', repeated: false, retry: 'end', hooks: true },
  { name: 'run_cmd', argumentsText: PATH, mode: 'auto', repeated: false, retry: 'end' },
];

/** The run of calls before the target, as the turn carries it to the target's chart. */
function incomingLoop(scenario: ToolCallScenario, args: Record<string, unknown>): LoopTracker {
  const rules = loopRulesOf(scenario);
  if (scenario.child) {
    const afterSpawn = passWait(observeCall(FRESH_TRACKER, 'spawn_agent', JSON.parse(SPAWN) as Record<string, unknown>, rules).tracker);
    return scenario.repeated ? afterWait(afterSpawn, true) : afterSpawn;
  }
  if (scenario.limit) return observeCall(FRESH_TRACKER, 'spawn_agent', JSON.parse(SPAWN_FIRST) as Record<string, unknown>, rules).tracker;
  // The identical call before: counted once.
  return scenario.repeated ? observeCall(FRESH_TRACKER, scenario.name, args, rules).tracker : FRESH_TRACKER;
}

/** In traversal the turn id says whether the runtime has dispatch hooks; the runtime reads the session's. */
const HOOKED_TURN = 'hooked';

type Ctx = { context: ToolCallContext };
const tool = (context: ToolCallContext) => PATH_TOOLS[context.call.name];
const effectOf = (context: ToolCallContext): ToolEffect => {
  const t = tool(context);
  return t && t !== 'control' ? t.effect : 'read';
};
/** In traversal the session id carries the scenario's mode; the runtime reads the session's. */
const modeOf = (context: ToolCallContext) => context.sessionId as PermissionMode;

/** The chart with the scenario's permission rule for the target's tool (issue 24); the runtime matches the session's rules on the name. */
const traversalToolCallMachine = (rule: RuleDecision | undefined, retry: ToolCallScenario['retry']) =>
  toolCallChart(
    (name, args) =>
      PATH_TOOLS[name] === 'control' || isDelegationTool(name) || typeof args.path === 'string' ? { ok: true, args } : { ok: false, message: 'path: expected string' },
    (): MatchedRule | null => (rule ? { pattern: 'target', decision: rule } : null),
    // Issue 30: the runtime's policy for registry tools; a read may repeat, the others may not.
    (input) => {
      const t = PATH_TOOLS[input.call.name];
      return retry && typeof t === 'object' ? { ...RETRY_POLICY, continueLoop: retry === 'continue', repeatable: t.effect === 'read' } : null;
    },
  ).provide({
  guards: {
    isControlTool: ({ context }: Ctx) => tool(context) === 'control' || isDelegationTool(context.call.name),
    isRegistryTool: ({ context }: Ctx) => typeof tool(context) === 'object',
    hasAuthorizeHook: ({ context }: Ctx) => (tool(context) as { hook?: boolean } | undefined)?.hook === true,
    modeForbidsCall: ({ context }: Ctx) => modeForbids(modeOf(context), effectOf(context)),
    modeRequiresApproval: ({ context }: Ctx) => modeRequiresApproval(modeOf(context), effectOf(context)),
    hasBeforeDispatchHooks: ({ context }: Ctx) => context.turnId === HOOKED_TURN,
    hasAfterDispatchHooks: ({ context }: Ctx) => context.turnId === HOOKED_TURN,
  },
  actions: {
    requestEffect: recordEffect,
    cancelEffect: forgetEffect,
    startSpan: () => undefined,
    emitToolCallStarted: () => undefined,
    setLiveStatus: () => undefined,
    emitPermissionResolved: () => undefined,
    finishCall: () => undefined,
    emitGuardrailTriggered: () => undefined,
  },
  });

const commands: EventObject[] = [{ type: 'tool.cancel' }, { type: 'tool.stop' }];

/** What the runtime reads from the session and the agent, here from the scenario. */
function scenarioMachine(scenario: ToolCallScenario) {
  return traversalToolCallMachine(scenario.rule, scenario.retry).provide({
    guards: {
      approvalNonInteractive: () => scenario.nonInteractive === true,
      delegationForbidden: () => scenario.delegation !== 'allowed',
      childAgentForbidden: ({ context }: Ctx) => context.args.agent !== 'helper',
      childLimitReached: () => scenario.limit === true,
      agentSwitchForbidden: ({ context }: Ctx) => context.args.agent !== 'other',
    },
  });
}

function events(machine: AnyMachineSnapshot, scenario: ToolCallScenario): EventObject[] {
  const id = pendingEffectOf(machine);
  const done = (output: unknown) => ({ type: 'effect.done', id, output }) as EventObject;
  const failed = { type: 'effect.failed', id, error: new Error('it broke') } as EventObject;
  if (machine.matches({ active: 'retrying' })) return [{ type: RETRY_BACKOFF }, ...commands];
  if (machine.matches({ active: 'waiting_permission' })) {
    return [{ type: 'permission.resolve', decision: 'allow_once' } as EventObject, { type: 'permission.resolve', decision: 'deny' } as EventObject, ...commands];
  }
  switch (pendingEffectOf(machine)) {
    case 'authorize':
      return [done({ decision: 'allow' }), done({ decision: 'ask', paths: ['a.txt'] }), done({ decision: 'deny', reason: 'protected' }), failed, ...commands];
    case 'executeTool': {
      const runs = [...(['succeeded', 'failed', 'cancelled'] as const).map((status) => done({ status, content: status })), failed, ...commands];
      // Issue 30: a run that times out, or fails transiently.
      if (!scenario.retry) return runs;
      return [...runs, done({ status: 'failed', content: 'timed out', failure: 'timeout' }), done({ status: 'failed', content: 'flaky', failure: 'transient' })];
    }
    case 'beforeToolDispatch':
      return [
        done({ decision: 'allow' }),
        done({ decision: 'deny', reason: 'not today' }),
        done({ decision: 'rewrite', args: { path: 'b.txt' } }),
        done({ decision: 'invalid_rewrite', message: 'path: expected string' }),
        failed,
        ...commands,
      ];
    case 'afterToolDispatch':
      return [done(undefined), failed, ...commands];
    case 'delegate':
      // A spawn succeeds; a message to a child this session does not have is a failed result.
      return [done({ status: scenario.name === 'spawn_agent' ? 'succeeded' : 'failed', content: 'delegated' }), failed, ...commands];
    case 'waitAgent':
      if (!scenario.child) return [done({ timedOut: false, result: { status: 'failed', content: 'UnknownAgentId' } }), failed, ...commands];
      return [
        done({ timedOut: true, result: { status: 'failed', content: 'timed out' } }),
        done({ timedOut: false, result: { status: 'succeeded', content: 'answered' } }),
        ...commands,
      ];
    case 'runControlTool':
    case 'writeResult':
      return [done(undefined), failed];
    default:
      return [];
  }
}

export function toolCallModel(scenario: ToolCallScenario): ChartModel<null> {
  const args = JSON.parse(scenario.argumentsText === 'not json' ? '{}' : scenario.argumentsText) as Record<string, unknown>;
  return {
    machine: scenarioMachine(scenario),
    input: {
      sessionId: scenario.mode,
      turnId: scenario.hooks ? HOOKED_TURN : 't',
      call: { id: 'target', name: scenario.name, argumentsText: scenario.argumentsText },
      loop: incomingLoop(scenario, args),
      loopRules: loopRulesOf(scenario),
    },
    env: null,
    events: ({ machine }) => events(machine, scenario),
    nextEnv: () => null,
    key: ({ machine }) => {
      const c = machine.context as ToolCallContext;
      return JSON.stringify([machine.value, machine.status, pendingEffectOf(machine), c.result?.status ?? null, c.termination?.kind ?? null, c.attempt]);
    },
  };
}
