import { sessionMachine } from '../../machines/session.machine.js';
import { toolCallChart } from '../../machines/tool-call.machine.js';
import { turnMachine } from '../../machines/turn.machine.js';
import { sessionEffects, type SessionEffectDeps } from './session-effects.js';
import { toolCallEffects } from './tool-call-effects.js';
import { turnEffects } from './turn-effects.js';
import { directEffectActions, effectPort, type AnyHandler } from './effect-port.js';
import { compactionEffects } from './compaction-effects.js';
import { delegationEffects, type SubagentDeps } from './delegation-effects.js';
import { SWITCH_AGENT } from '../../machines/delegation.js';
import type { ToolEffectInput } from '../../machines/tool-call.effects.js';

/** Effects whose signal a cancel or stop aborts: a model call, an authorize hook, a running tool, a summary, world-state reads, dispatch hooks, `onMistakeLimit`, a held turn's wait, a `wait_agent`. */
const CANCELLABLE: ReadonlySet<string> = new Set(['callModel', 'authorize', 'executeTool', 'compact', 'prepareRequest', 'beforeToolDispatch', 'afterToolDispatch', 'consultMistakeLimit', 'awaitRelease', 'waitAgent']);

/**
 * The pure charts with this runtime's effects plugged in, built once per runtime and shared by
 * all of its sessions (effects find their session by id).
 */
export function provideMachines(deps: SessionEffectDeps & SubagentDeps) {
  const tool = toolCallEffects(deps);
  const turn = turnEffects(deps, tool);
  const session = sessionEffects(deps);
  const delegation = delegationEffects(deps);
  const effects = directEffectActions();
  const toolCall = toolCallChart(tool.validate, tool.ruleFor, tool.retryFor).provide({
    guards: { ...tool.guards, ...delegation.guards },
    actions: { ...tool.actions, ...effects },
    delays: tool.delays,
  });
  const providedTurn = turnMachine.provide({ actors: { toolCall }, guards: turn.guards, actions: { ...turn.actions, ...delegation.actions, ...effects } });
  const handlers = {
    ...turn.handlers,
    ...tool.handlers,
    ...session.handlers,
    ...compactionEffects(deps).handlers,
    ...delegation.handlers,
    // Issue 30: `switch_agent` runs in `running_control` like `update_plan`; its work is delegation's.
    runControlTool: (input: ToolEffectInput) => (input.name === SWITCH_AGENT ? delegation.switchInRun(input) : tool.handlers.runControlTool(input)),
  } as Record<string, AnyHandler>;
  return sessionMachine.provide({
    actors: { turn: providedTurn, effectPort: effectPort(handlers, CANCELLABLE) },
    actions: { ...session.actions, requestEffect: effects.requestEffect },
  });
}

export type ProvidedSessionMachine = ReturnType<typeof provideMachines>;
