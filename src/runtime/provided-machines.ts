import { sessionMachine } from '../../machines/session.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';
import { turnMachine } from '../../machines/turn.machine.js';
import { sessionEffects } from './session-effects.js';
import { toolCallEffects } from './tool-call-effects.js';
import { turnEffects, type TurnEffectDeps } from './turn-effects.js';

/**
 * The pure charts with this runtime's effects plugged in, built once per runtime and shared by
 * all of its sessions (effects find their session by id).
 */
export function provideMachines(deps: TurnEffectDeps) {
  const tool = toolCallEffects(deps);
  const turn = turnEffects(deps);
  const session = sessionEffects(deps);
  const toolCall = toolCallMachine.provide({ actors: tool.actors, guards: tool.guards, actions: tool.actions });
  const providedTurn = turnMachine.provide({ actors: { ...turn.actors, toolCall }, guards: turn.guards, actions: turn.actions });
  return sessionMachine.provide({ actors: { ...session.actors, turn: providedTurn }, actions: session.actions });
}

export type ProvidedSessionMachine = ReturnType<typeof provideMachines>;
