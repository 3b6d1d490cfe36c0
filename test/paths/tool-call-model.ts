import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { defaultLoopRules, FRESH_TRACKER, observeCall, type LoopRules } from '../../machines/guardrails.js';
import { toolCallMachine, validationAction, type ToolCallContext } from '../../machines/tool-call.machine.js';
import type { PermissionMode } from '../../src/index.js';
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
}

const PATH = '{"path":"a.txt"}';
const PLAN = JSON.stringify({ plan: [{ step: 'read', status: 'in_progress' }] });

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
];

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

export const traversalToolCallMachine = toolCallMachine.provide({
  guards: {
    isControlTool: ({ context }: Ctx) => tool(context) === 'control',
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
    validateArguments: validationAction((context) =>
      tool(context) === 'control' || typeof context.args.path === 'string' ? { ok: true, args: context.args } : { ok: false, message: 'path: expected string' },
    ),
    startSpan: () => undefined,
    emitToolCallStarted: () => undefined,
    setLiveStatus: () => undefined,
    emitPermissionResolved: () => undefined,
    finishCall: () => undefined,
    emitGuardrailTriggered: () => undefined,
  },
});

const commands: EventObject[] = [{ type: 'tool.cancel' }, { type: 'tool.stop' }];

function events(machine: AnyMachineSnapshot): EventObject[] {
  const id = pendingEffectOf(machine);
  const done = (output: unknown) => ({ type: 'effect.done', id, output }) as EventObject;
  const failed = { type: 'effect.failed', id, error: new Error('it broke') } as EventObject;
  if (machine.matches({ active: 'waiting_permission' })) {
    return [{ type: 'permission.resolve', decision: 'allow_once' } as EventObject, { type: 'permission.resolve', decision: 'deny' } as EventObject, ...commands];
  }
  switch (pendingEffectOf(machine)) {
    case 'authorize':
      return [done({ decision: 'allow' }), done({ decision: 'ask', paths: ['a.txt'] }), done({ decision: 'deny', reason: 'protected' }), failed, ...commands];
    case 'executeTool':
      return [...(['succeeded', 'failed', 'cancelled'] as const).map((status) => done({ status, content: status })), failed, ...commands];
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
    machine: traversalToolCallMachine,
    input: {
      sessionId: scenario.mode,
      turnId: scenario.hooks ? HOOKED_TURN : 't',
      call: { id: 'target', name: scenario.name, argumentsText: scenario.argumentsText },
      // The identical call before, as the turn carries it: counted once.
      loop: scenario.repeated ? observeCall(FRESH_TRACKER, scenario.name, args, loopRulesOf(scenario)).tracker : FRESH_TRACKER,
      loopRules: loopRulesOf(scenario),
    },
    env: null,
    events: ({ machine }) => events(machine),
    nextEnv: () => null,
    key: ({ machine }) => {
      const c = machine.context as ToolCallContext;
      return JSON.stringify([machine.value, machine.status, pendingEffectOf(machine), c.result?.status ?? null, c.termination?.kind ?? null]);
    },
  };
}
