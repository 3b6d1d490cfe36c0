import type { AnyActorRef, EventObject } from 'xstate';
import { FROM_BRIDGE, type BridgeEvent, type CommandAnswer, type EmbeddedSessionContext, type SessionCommand } from '../../machines/embedded-session.machine.js';
import type { CommandName, SessionCommands } from '../protocol/command-catalog.js';
import type { EmbeddingPort } from './session-bridge.js';
import type { SessionHandle } from './session-handle.js';
import { messageOf } from '../protocol/error-message.js';

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

/**
 * The embedded chart's commands (`SessionCommand`): the catalog command each runs on the handle,
 * and where its input is in the event — the whole event, one field of it, or nothing.
 */
const COMMANDS: { [T in SessionCommand['type']]: { name: CommandName; input: (command: EventObject) => unknown } } = {
  'session.start_turn': { name: 'startTurn', input: (command) => command },
  'session.cancel_turn': { name: 'cancelTurn', input: (command) => field(command, 'turnId') },
  'session.resolve_permission': { name: 'resolvePermission', input: (command) => command },
  'session.set_mode': { name: 'setPermissionMode', input: (command) => field(command, 'mode') },
  'session.deliver_agent_message': { name: 'deliverAgentMessage', input: (command) => command },
  'session.compact': { name: 'compactConversation', input: () => undefined },
  'session.rewind': { name: 'rewindConversation', input: (command) => field(command, 'compactionId') },
  'session.reload': { name: 'reload', input: () => undefined },
};

function isCommandType(type: string): type is SessionCommand['type'] {
  return Object.hasOwn(COMMANDS, type);
}

function dispatch(commands: SessionCommands, command: EventObject): Promise<CommandAnswer> {
  if (!isCommandType(command.type)) return Promise.resolve({ ok: false, error: { code: 'UnknownCommand', message: `no command '${command.type}'` } });
  const { name, input } = COMMANDS[command.type];
  return commands[name](input(command));
}

/** One field of a command, read so that a throwing getter or proxy is just a missing value (the handle then answers InvalidInput). */
function field(command: EventObject, key: string): unknown {
  try {
    return (command as unknown as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}
