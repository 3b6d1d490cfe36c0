import { z } from 'zod';

/** Validation of everything a host hands a session: one schema per command. */

// NUL cannot be stored in PostgreSQL text and has no business in an id.
export const idSchema = z
  .string()
  .min(1)
  .max(200)
  .refine((value) => !value.includes('\0'), 'must not contain NUL');

/** A single text part may be large, but not unbounded: 1 MB of text is refused, not truncated. */
export const MAX_TEXT_CHARS = 1_000_000;

export const inputPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().max(MAX_TEXT_CHARS) }),
  z.object({ type: z.literal('skill'), name: z.string().min(1).max(200) }),
]);

export const triggerTypeSchema = z.enum(['message', 'manual_action', 'api_action', 'hook', 'system']);

export const startTurnSchema = z.object({
  clientRequestId: idSchema,
  input: z.array(inputPartSchema).max(100),
  /** What started the run (RL-1); `message` by default. */
  trigger: triggerTypeSchema.default('message'),
});

export const turnIdSchema = idSchema;

export const resolvePermissionSchema = z.object({
  turnId: idSchema,
  toolCallId: idSchema,
  decision: z.enum(['allow_once', 'deny']),
});

export const permissionModeSchema = z.enum(['ask', 'auto', 'read_only']);

export const agentMessageSchema = z.object({ from: idSchema, text: z.string().min(1) });

export const afterSequenceSchema = z.number().int().min(0);

export const busyPolicySchema = z.enum(['reject', 'enqueue', 'interrupt']);

export const createSessionSchema = z.object({
  agent: idSchema.default('default'),
  permissionMode: permissionModeSchema.default('ask'),
  workspaceDir: z
    .string()
    .min(1)
    .max(4_096)
    .refine((value) => !value.includes('\0'), 'must not contain NUL')
    .optional(),
  busyPolicy: busyPolicySchema.default('reject'),
});

export type StartTurnCommand = z.infer<typeof startTurnSchema>;
export type InputPart = z.infer<typeof inputPartSchema>;
export type CreateSessionOptions = z.input<typeof createSessionSchema>;

export type InvalidInput = { code: 'InvalidInput'; message: string };

export function invalidInput(error: z.ZodError): { ok: false; error: InvalidInput } {
  return { ok: false, error: { code: 'InvalidInput', message: z.prettifyError(error) } };
}

/** RT-4, CW-7: the same rough estimate everywhere — a token per four bytes of JSON. */
export function estimateTokens(value: unknown): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(value), 'utf8') / 4);
}
