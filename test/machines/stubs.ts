import { setup, type AnyStateMachine } from 'xstate';
import { EFFECT_PORT } from '../../machines/effect-port.js';
import { toolCallChart } from '../../machines/tool-call.machine.js';
import type { DispatchOutcome, ExecuteInput, WriteResultInput } from '../../machines/tool-call.effects.js';
import type { AuthorizationDecision, ToolResult } from '../../src/protocol/tool-result.js';
import { effectPort, type EffectCancellation } from '../../src/runtime/effect-port.js';

type Handler = (input: never, signal: AbortSignal) => Promise<unknown>;

/** An effect port whose effects are the given test functions (handed a real signal); cancel aborts all of them. */
export function stubPort(handlers: Record<string, Handler>) {
  const withSignals = Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [name, (input: unknown, cancellation: EffectCancellation) => handler(input as never, cancellation.signal)]),
  );
  return effectPort(withSignals, new Set(Object.keys(handlers)));
}

/** Effects that never settle: the chart stays in the state that asked. */
export const never = (): Promise<never> => new Promise<never>(() => undefined);

/**
 * Runs a chart the way the session does: as a child of a root that hosts the effect port.
 * The root's output is the chart's output.
 */
export function hostWithPort<T extends AnyStateMachine>(chart: T, input: unknown, handlers: Record<string, Handler>) {
  return setup({ actors: { chart: chart as AnyStateMachine, effects: stubPort(handlers) } }).createMachine({
    context: { output: undefined as unknown, received: [] as string[] },
    invoke: { id: EFFECT_PORT, systemId: EFFECT_PORT, src: 'effects' },
    initial: 'running',
    states: {
      running: {
        invoke: {
          id: 'chart',
          src: 'chart',
          input,
          onDone: { target: 'done', actions: ({ context, event }) => void (context.output = event.output) },
        },
        on: { '*': { actions: ({ context, event }) => void context.received.push(event.type) } },
      },
      done: { type: 'final' },
    },
    output: ({ context }) => context.output,
  });
}

/** The tool-call chart with recording stubs for its guards, actions and effects. */
export function toolCallStubs(
  options: {
    authorize?: AuthorizationDecision;
    execute?: (input: ExecuteInput, signal: AbortSignal) => Promise<ToolResult>;
    /** What the session's permission mode says about every call: deny it, ask for it, or allow it (default). */
    mode?: 'deny' | 'ask';
    /** The result write fails with this error. */
    writeFails?: Error;
    /** RL-4: what the `beforeToolDispatch` hooks decide; no hooks when absent. */
    beforeDispatch?: DispatchOutcome | Error;
    /** RL-4: the `afterToolDispatch` hooks run (and fail with this error when it is one). */
    afterDispatch?: true | Error;
    /** Nobody can answer an approval (a sub-agent's session). */
    nonInteractive?: boolean;
  } = {},
) {
  const written: WriteResultInput[] = [];
  const emitted: string[] = [];
  // As the runtime's: a name with no tool has no schema to pass.
  const machine = toolCallChart((name, args) => {
    if (name === 'update_plan') return { ok: true, args };
    if (name !== 'read_file') return { ok: false, message: `no schema for '${name}'` };
    return typeof args.path === 'string' ? { ok: true, args } : { ok: false, message: 'path: expected string' };
  }).provide({
    guards: {
      isControlTool: ({ context }) => context.call.name === 'update_plan',
      isRegistryTool: ({ context }) => context.call.name === 'read_file',
      hasAuthorizeHook: () => options.authorize !== undefined,
      hasBeforeDispatchHooks: () => options.beforeDispatch !== undefined,
      hasAfterDispatchHooks: () => options.afterDispatch !== undefined,
      modeForbidsCall: () => options.mode === 'deny',
      modeRequiresApproval: () => options.mode === 'ask',
      approvalNonInteractive: () => options.nonInteractive === true,
      delegationForbidden: () => true,
      childAgentForbidden: () => true,
      childLimitReached: () => false,
    },
    actions: {
      startSpan: () => emitted.push('span'),
      emitToolCallStarted: () => emitted.push('started'),
      setLiveStatus: (_, params) => emitted.push(`live:${params.status}`),
      emitPermissionResolved: (_, params) => emitted.push(`permission_resolved:${params.decision}`),
      finishCall: () => emitted.push('finished'),
      emitGuardrailTriggered: (_, params) => emitted.push(`guardrail:${params.rule}:${params.level}:${params.count}`),
    },
  });
  const handlers: Record<string, Handler> = {
    authorize: async () => options.authorize ?? { decision: 'allow' },
    executeTool: (input: ExecuteInput, signal: AbortSignal) =>
      options.execute ? options.execute(input, signal) : Promise.resolve({ status: 'succeeded', content: `ran ${input.name}` }),
    runControlTool: async () => ({ status: 'succeeded', content: 'plan stored' }),
    beforeToolDispatch: async () => {
      if (options.beforeDispatch instanceof Error) throw options.beforeDispatch;
      return options.beforeDispatch ?? { decision: 'allow' };
    },
    afterToolDispatch: async () => {
      if (options.afterDispatch instanceof Error) throw options.afterDispatch;
    },
    writeResult: async (input: WriteResultInput) => {
      if (options.writeFails) throw options.writeFails;
      written.push(input);
    },
  };
  return { machine, handlers, written, emitted };
}
