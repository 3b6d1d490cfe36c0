import { fromPromise } from 'xstate';
import { toolCallMachine, validationAction, type ExecuteInput, type ToolEffectInput, type WriteResultInput } from '../../machines/tool-call.machine.js';
import type { AuthorizationDecision, ToolResult } from '../../src/protocol/tool-result.js';

/** Effects for the tool-call chart that record what the chart asked for; no runtime involved. */
export function toolCallStubs(options: { authorize?: AuthorizationDecision; execute?: (input: ExecuteInput, signal: AbortSignal) => Promise<ToolResult> } = {}) {
  const written: WriteResultInput[] = [];
  const emitted: string[] = [];
  const machine = toolCallMachine.provide({
    actors: {
      authorize: fromPromise(async () => options.authorize ?? { decision: 'allow' }),
      executeTool: fromPromise(async ({ input, signal }) =>
        options.execute ? options.execute(input, signal) : { status: 'succeeded' as const, content: `ran ${input.name}` },
      ),
      runControlTool: fromPromise<ToolResult, ToolEffectInput>(async () => ({ status: 'succeeded', content: 'plan stored' })),
      writeResult: fromPromise(async ({ input }) => {
        written.push(input);
      }),
    },
    guards: {
      isControlTool: ({ context }) => context.call.name === 'update_plan',
      isRegistryTool: ({ context }) => context.call.name === 'read_file',
      hasAuthorizeHook: () => options.authorize !== undefined,
      modeForbidsCall: () => false,
      modeRequiresApproval: () => false,
    },
    actions: {
      validateArguments: validationAction((context) =>
        typeof context.args.path === 'string' || context.call.name === 'update_plan'
          ? { ok: true, args: context.args }
          : { ok: false, message: 'path: expected string' },
      ),
      startSpan: () => emitted.push('span'),
      emitToolCallStarted: () => emitted.push('started'),
      setLiveStatus: (_, params) => emitted.push(`live:${params.status}`),
      emitPermissionResolved: (_, params) => emitted.push(`permission_resolved:${params.decision}`),
      finishCall: () => emitted.push('finished'),
    },
  });
  return { machine, written, emitted };
}

/** An effect that does nothing and succeeds, typed for whichever slot it fills. */
export function noop<Input>() {
  return fromPromise<void, Input>(async () => undefined);
}

/** An effect that never settles: the chart stays in the state that invoked it. */
export function never<Input>() {
  return fromPromise<void, Input>(() => new Promise<void>(() => undefined));
}
