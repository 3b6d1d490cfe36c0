import { embeddedSessionMachine } from '../../machines/embedded-session.machine.js';
import { sessionBridge, type EmbeddingPort } from './session-bridge.js';
import { runCommand } from './session-commands.js';

/**
 * The session logic a host machine invokes or spawns (`runtime.sessionLogic`). A host may
 * `.provide()` its own approval policy (`allowsAutomatically`, `deniesAutomatically`) and its own
 * `notifyParent`; the bridge to the runtime (`sessionBridge`, `runCommand`) carries persistence,
 * sequencing and ownership, so every `.provide()` of this logic puts the runtime's back.
 */
export type SessionLogic = typeof embeddedSessionMachine;

type Implementations = Parameters<SessionLogic['provide']>[0];

export function createSessionLogic(port: EmbeddingPort, warn: (message: string) => void): SessionLogic {
  const fixed = { actors: { sessionBridge: sessionBridge(port) }, actions: { runCommand: runCommand(port) } } as Implementations;
  return sealed(embeddedSessionMachine.provide(fixed), fixed, warn);
}

function sealed(logic: SessionLogic, fixed: Implementations, warn: (message: string) => void): SessionLogic {
  const provide = logic.provide.bind(logic);
  return Object.assign(logic, {
    provide: (implementations: Implementations): SessionLogic => {
      for (const name of overridden(implementations)) warn(`sessionLogic.provide(): '${name}' belongs to the runtime (persistence, sequencing, ownership); the override is ignored`);
      return sealed(provide(implementations).provide(fixed), fixed, warn);
    },
  });
}

function overridden(implementations: Implementations): string[] {
  const names: string[] = [];
  if (implementations.actors && Object.hasOwn(implementations.actors, 'sessionBridge')) names.push('sessionBridge');
  if (implementations.actions && Object.hasOwn(implementations.actions, 'runCommand')) names.push('runCommand');
  return names;
}
