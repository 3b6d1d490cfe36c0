import { z } from 'zod';
import { agentMessageSchema, agentNameSchema, permissionModeSchema, resolvePermissionSchema, startTurnSchema, turnIdSchema } from './commands.js';
import { refusalAmong, type CommandError, type CommandErrorCode } from './command-errors.js';
import { turnStatusSchema } from './outcome.js';

/**
 * Every session command, once: the input the session handle validates, the fields of its success,
 * the codes it may refuse with, and whether hosts route it (over HTTP and between cluster hosts)
 * or only the in-process handle takes it. The handle's methods, the host's `SessionAccess`, the
 * cluster's wire and dispatch, the HTTP bodies and the chat client are typed from this table, so
 * a command added here is missing, to TypeScript, wherever it is not yet served.
 */

const stopped = ['RuntimeStopped', 'SessionClosed'] satisfies CommandErrorCode[];
const turnRefusals = ['Busy', 'EmptyInput', 'ReloadRequired', 'SessionActive', 'UnknownSkill', 'SkillTooLarge', 'InvalidInput', ...stopped] satisfies CommandErrorCode[];

/** Takes no input (the handle's method has no parameter). */
const noInput = z.void();

function command<I extends z.ZodType, O extends z.ZodRawShape, const E extends readonly CommandErrorCode[], R extends boolean>(spec: {
  input: I;
  ok: O;
  errors: E;
  routed: R;
}) {
  return { input: spec.input, ok: z.object({ ok: z.literal(true), ...spec.ok }), errors: spec.errors, routed: spec.routed };
}

export const commandCatalog = {
  /** RT-1: accepted before anything is written (the in-process way; hosts submit). */
  startTurn: command({ input: startTurnSchema, ok: { turnId: z.string(), queued: z.literal(true).optional() }, errors: turnRefusals, routed: false }),
  /** RL-1: answered once the turn's input is durable. */
  submitTurn: command({
    input: startTurnSchema,
    ok: { turnId: z.string(), runId: z.string(), status: turnStatusSchema },
    errors: [...turnRefusals, 'PersistenceError'],
    routed: true,
  }),
  cancelTurn: command({ input: turnIdSchema, ok: {}, errors: ['TurnNotActive', 'InvalidInput', 'PersistenceError', ...stopped], routed: true }),
  resolvePermission: command({ input: resolvePermissionSchema, ok: {}, errors: ['TurnNotActive', 'PermissionNotPending', 'PersistenceError', 'InvalidInput', ...stopped], routed: true }),
  setPermissionMode: command({ input: permissionModeSchema, ok: {}, errors: ['PersistenceError', 'InvalidInput', ...stopped], routed: true }),
  switchAgent: command({
    input: agentNameSchema,
    ok: { agent: z.string() },
    errors: ['UnknownAgent', 'AgentSwitchNotAllowed', 'SessionActive', 'PersistenceError', 'InvalidInput', ...stopped],
    routed: true,
  }),
  deliverAgentMessage: command({ input: agentMessageSchema, ok: {}, errors: ['MessageTooLarge', 'MailboxFull', 'InvalidInput', ...stopped], routed: true }),
  compactConversation: command({
    input: noInput,
    ok: { compactionId: z.string() },
    errors: ['SessionActive', 'ReloadRequired', 'NothingToCompact', 'CompactionFailed', ...stopped],
    routed: true,
  }),
  /** The compaction id is validated as any id. */
  rewindConversation: command({
    input: turnIdSchema,
    ok: {},
    errors: ['SessionActive', 'UnknownCompaction', 'ReloadRequired', 'CompactionFailed', 'InvalidInput', ...stopped],
    routed: true,
  }),
  /** CP-4: the host reloads a session that needs it before its request's own command. */
  reload: command({ input: noInput, ok: {}, errors: ['SessionActive', 'ReloadRequired', 'CompactionFailed', ...stopped], routed: false }),
};

type Catalog = typeof commandCatalog;
export type CommandName = keyof Catalog;
/** The commands a host serves for a session, wherever it is held. */
export type RoutedCommandName = { [K in CommandName]: Catalog[K]['routed'] extends true ? K : never }[CommandName];

export type CommandInput<K extends CommandName> = z.input<Catalog[K]['input']>;
type CommandErrorCodeOf<K extends CommandName> = Catalog[K]['errors'][number];
export type CommandOk<K extends CommandName> = z.output<Catalog[K]['ok']>;
/** A refusal of command `K`, with one of its codes (`C`: only some of them). */
export type CommandRefusal<K extends CommandName, C extends CommandErrorCodeOf<K> = CommandErrorCodeOf<K>> = { ok: false; error: CommandError<C> };
export type CommandResult<K extends CommandName> = CommandOk<K> | CommandRefusal<K>;

/** The session handle's commands: any value in (validated there), the catalog's answer out, never a throw. */
export type SessionCommands = { [K in CommandName]: (input: unknown) => Promise<CommandResult<K>> };

/** The same table, typed so that looking a command up by a generic name keeps that name's types. */
const specOf: { [K in CommandName]: { ok: z.ZodType<CommandOk<K>>; errors: readonly CommandErrorCodeOf<K>[] } } = commandCatalog;

const routed: ReadonlySet<string> = new Set(Object.entries(commandCatalog).flatMap(([name, spec]) => (spec.routed ? [name] : [])));

export function isRoutedCommand(name: string): name is RoutedCommandName {
  return routed.has(name);
}

const answered = z.discriminatedUnion('ok', [z.object({ ok: z.literal(true) }).loose(), z.object({ ok: z.literal(false), error: z.unknown() })]);

/**
 * `value` as command `name`'s result, or undefined when it is not one: a success without the
 * command's fields, or a refusal with a code the command does not list or fields that code lacks.
 */
export function commandResultOf<K extends CommandName>(name: K, value: unknown): CommandResult<K> | undefined {
  const read = answered.safeParse(value);
  if (!read.success) return undefined;
  if (!read.data.ok) {
    const error = refusalAmong(specOf[name].errors, read.data.error);
    return error && { ok: false, error };
  }
  return commandOkOf(name, read.data);
}

/** `value` as command `name`'s success, or undefined when it lacks the command's fields. */
export function commandOkOf<K extends CommandName>(name: K, value: unknown): CommandOk<K> | undefined {
  const ok = specOf[name].ok.safeParse(value);
  return ok.success ? ok.data : undefined;
}
