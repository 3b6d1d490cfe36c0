import { z } from 'zod';

/**
 * Every refusal a session command may answer with. A code has one shape wherever it is answered,
 * so the codes a command lists (`command-catalog.ts`) type its refusals, and a refusal that
 * crossed from another host can be checked against them.
 */
const message = z.string();
const refusal = z.discriminatedUnion('code', [
  z.object({ code: z.literal('RuntimeStopped') }),
  z.object({ code: z.literal('SessionClosed') }),
  z.object({ code: z.literal('InvalidInput'), message }),
  z.object({ code: z.literal('PersistenceError'), message }),
  /** Without a message from the chart's guard; with the cause when a checkpoint could not be installed. */
  z.object({ code: z.literal('ReloadRequired'), message: message.optional() }),
  z.object({ code: z.literal('SessionActive') }),
  z.object({ code: z.literal('Busy'), turnId: z.string() }),
  z.object({ code: z.literal('EmptyInput') }),
  z.object({ code: z.literal('UnknownSkill'), name: z.string() }),
  z.object({ code: z.literal('SkillTooLarge'), name: z.string(), tokens: z.number() }),
  z.object({ code: z.literal('TurnNotActive') }),
  z.object({ code: z.literal('PermissionNotPending') }),
  z.object({ code: z.literal('MessageTooLarge'), tokens: z.number() }),
  z.object({ code: z.literal('MailboxFull'), messages: z.number(), tokens: z.number() }),
  z.object({ code: z.literal('UnknownAgent'), message }),
  z.object({ code: z.literal('AgentSwitchNotAllowed'), message }),
  z.object({ code: z.literal('NothingToCompact'), message }),
  z.object({ code: z.literal('UnknownCompaction'), message }),
  z.object({ code: z.literal('CompactionFailed'), message }),
]);

type AnyRefusal = z.output<typeof refusal>;
export type CommandErrorCode = AnyRefusal['code'];
/** The refusal of code `C`; of a union of codes, any one of them. */
export type CommandError<C extends CommandErrorCode = CommandErrorCode> = Extract<AnyRefusal, { code: C }>;

function isAmong<C extends CommandErrorCode>(codes: readonly C[], error: AnyRefusal): error is CommandError<C> {
  return codes.some((code) => code === error.code);
}

/** `value` as a refusal with one of `codes`, or undefined when its code is not among them or its fields do not fit the code. */
export function refusalAmong<C extends CommandErrorCode>(codes: readonly C[], value: unknown): CommandError<C> | undefined {
  const read = refusal.safeParse(value);
  return read.success && isAmong(codes, read.data) ? read.data : undefined;
}
