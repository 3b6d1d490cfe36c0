import type { AnyActorRef, EventObject } from 'xstate';
import { FROM_BRIDGE, type BridgeEvent, type CommandAnswer, type EmbeddedSessionContext } from '../../machines/embedded-session.machine.js';
import type { EmbeddingPort } from './session-bridge.js';
import type { SessionHandle } from './session-handle.js';
import { messageOf } from '../util/errors.js';

/**
 * The embedded chart's `runCommand`: the command goes to the session's handle — the same
 * validation, persistence and sequencing as a host calling the handle — and its answer comes back
 * to the chart as `bridge.reply`. Commands of one actor run one at a time, in the order sent.
 * Nothing a host sends can make it throw.
 */
export function runCommand(port: EmbeddingPort) {
  /** Per embedding actor, its last command: each runs once the one before was answered. */
  const lastCommand = new WeakMap<AnyActorRef, Promise<void>>();
  return ({ context, self }: { context: EmbeddedSessionContext; self: AnyActorRef }, command: EventObject): void => {
    const sessionId = context.sessionId;
    const run = async () => {
      const result = await answer(sessionId === null ? undefined : port.held(sessionId), command);
      // A host that stopped the actor meanwhile no longer hears answers.
      if (self.getSnapshot().status === 'active') self.send({ type: 'bridge.reply', command, result, [FROM_BRIDGE]: true } as BridgeEvent);
    };
    // In order, as sent: a mode set before a turn is stored before that turn is accepted.
    const next = (lastCommand.get(self) ?? Promise.resolve()).then(run);
    lastCommand.set(self, next);
  };
}

async function answer(handle: SessionHandle | undefined, command: EventObject): Promise<CommandAnswer> {
  if (!handle?.isOpen) return { ok: false, error: { code: 'SessionClosed' } };
  try {
    return await dispatch(handle, command);
  } catch (error) {
    // The handle answers every command with a value; this is a defect, still answered rather than thrown.
    return { ok: false, error: { code: 'InternalError', message: messageOf(error) } };
  }
}

function dispatch(handle: SessionHandle, command: EventObject): Promise<CommandAnswer> {
  switch (command.type) {
    case 'session.start_turn':
      return handle.startTurn(command);
    case 'session.cancel_turn':
      return handle.cancelTurn(field(command, 'turnId'));
    case 'session.resolve_permission':
      return handle.resolvePermission(command);
    case 'session.set_mode':
      return handle.setPermissionMode(field(command, 'mode'));
    case 'session.deliver_agent_message':
      return handle.deliverAgentMessage(command);
    case 'session.compact':
      return handle.compactConversation();
    case 'session.rewind':
      return handle.rewindConversation(field(command, 'compactionId'));
    case 'session.reload':
      return handle.reload();
    default:
      return Promise.resolve({ ok: false, error: { code: 'UnknownCommand', message: `no command '${command.type}'` } });
  }
}

/** One field of a command, read so that a throwing getter or proxy is just a missing value (the handle then answers InvalidInput). */
function field(command: EventObject, key: string): unknown {
  try {
    return (command as unknown as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}
