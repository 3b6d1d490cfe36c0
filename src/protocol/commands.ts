import { z } from 'zod';
import { principalSchema } from './principal.js';
import { storable, STORABLE } from './storable.js';
import { traceParentSchema } from './trace-context.js';

/** Validation of everything a host hands a session: one schema per command. */

/**
 * A command schema whose `safeParse` answers every value. zod reads what it validates — and reads
 * it again to word its issues, when `error` is first read — so a getter or proxy trap that throws
 * (or a revoked proxy) escapes a plain `safeParse`, and the command would throw instead of
 * answering `InvalidInput`.
 */
function readSafely<S extends z.ZodType>(schema: S): S {
  const parse = schema.safeParse.bind(schema);
  return Object.assign(schema, {
    safeParse: (value: unknown): z.ZodSafeParseResult<z.output<S>> => {
      try {
        const result = parse(value);
        return result.success ? result : { success: false, error: result.error };
      } catch {
        const error = new z.ZodError([{ code: 'custom', path: [], message: 'the value could not be read (a getter or proxy threw)', input: undefined }]);
        return { success: false, error: error as z.ZodError<z.output<S>> };
      }
    },
  });
}

export const idSchema = z.string().min(1).max(200).refine(storable, STORABLE);

/** What `idSchema` accepts, as a plain check for a value already known to be a string (a provider's tool call id, every call). */
export function isValidId(value: string): boolean {
  return value.length >= 1 && value.length <= 200 && storable(value);
}

/** A session id handed to `openSession` or `inspectContextWindow`. */
export const sessionIdSchema = readSafely(idSchema.clone());

/** A page of `runtime.auditLog` (RL-4): newest first, `before` a sequence from the previous page. */
export const auditPageSchema = readSafely(
  z
    .object({
      limit: z.number().int().min(1).max(500).default(50),
      before: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    })
    .strict(),
);

/** A single text part may be large, but not unbounded: 1 MB of text is refused, not truncated. */
export const MAX_TEXT_CHARS = 1_000_000;

const inputPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().max(MAX_TEXT_CHARS) }),
  z.object({ type: z.literal('skill'), name: z.string().min(1).max(200) }),
]);

/** What started a run (RL-1). */
export const triggerTypeSchema = z.enum(['message', 'manual_action', 'api_action', 'hook', 'system']);
export type TriggerType = z.infer<typeof triggerTypeSchema>;

export const startTurnSchema = readSafely(
  z.object({
    clientRequestId: idSchema,
    input: z.array(inputPartSchema).max(100),
    /** What started the run (RL-1); `message` by default. */
    trigger: triggerTypeSchema.default('message'),
    /**
     * Issue 27: the W3C traceparent of the caller's span: the turn's span is its child. Hosts take it
     * from the `traceparent` header; it travels with routed commands. Absent: a synthetic root.
     */
    traceParent: traceParentSchema.optional(),
  }),
);

export const turnIdSchema = readSafely(idSchema.clone());

export const resolvePermissionSchema = readSafely(
  z.object({
    turnId: idSchema,
    toolCallId: idSchema,
    decision: z.enum(['allow_once', 'deny']),
    /** Issue 25: who answers (the host sets the caller's principal); the audit row names it. Absent: the session's owner. */
    principal: principalSchema.optional(),
  }),
);

/** RT-5: how a session's tool calls are authorized. */
export const permissionModeSchema = z.enum(['ask', 'auto', 'read_only']);
export type PermissionMode = z.infer<typeof permissionModeSchema>;

/** agent.switch: the name of the agent a session switches to. */
export const agentNameSchema = readSafely(idSchema.clone());

export const agentMessageSchema = readSafely(z.object({ from: idSchema, text: z.string().min(1) }));

export const afterSequenceSchema = readSafely(z.number().int().min(0));

/** RL-2: `reject` answers Busy, `enqueue` runs turns one at a time in arrival order, `interrupt` cancels the running one. */
export const busyPolicySchema = z.enum(['reject', 'enqueue', 'interrupt']);
export type BusyPolicy = z.infer<typeof busyPolicySchema>;

const createSessionShape = {
  agent: idSchema.default('default'),
  permissionMode: permissionModeSchema.default('ask'),
  workspaceDir: z.string().min(1).max(4_096).refine(storable, STORABLE).optional(),
  busyPolicy: busyPolicySchema.default('reject'),
  /** Nobody will answer approvals (a headless run): a call that would ask is a rule denial. Sub-agents' sessions always are. */
  nonInteractive: z.boolean().default(false),
};

export const createSessionSchema = readSafely(
  z.object({
    /** The session's id when the host names it (the AI SDK endpoint's chat id); a fresh one otherwise. */
    id: idSchema.optional(),
    ...createSessionShape,
    /** Issue 25: who owns the session (the caller that created it); a sub-agent's is its parent's. */
    principal: principalSchema.optional(),
    /** Issue 25: an admin creates it: its model calls draw on no principal's daily token budget (a sub-agent's follows its parent's). */
    quotaExempt: z.boolean().optional(),
  }),
);

/**
 * The input of `runtime.sessionLogic`: a stored session to reopen (the other fields then do not
 * apply), or the options of a new one; and whether the host machine hears typed events.
 */
export const embedSessionSchema = readSafely(
  z.object({
    sessionId: idSchema.optional(),
    ...createSessionShape,
    notifyParent: z.boolean().default(false),
  }),
);

export type InputPart = z.infer<typeof inputPartSchema>;
export type CreateSessionOptions = z.input<typeof createSessionSchema>;
export type EmbedSessionInput = z.input<typeof embedSessionSchema>;

export type InvalidInput = { code: 'InvalidInput'; message: string };

export function invalidInput(error: z.ZodError): { ok: false; error: InvalidInput } {
  return { ok: false, error: { code: 'InvalidInput', message: z.prettifyError(error) } };
}
