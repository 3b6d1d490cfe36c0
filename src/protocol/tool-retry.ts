import { z } from 'zod';

/**
 * Issue 30, item 4: what a tool call does when a run of its tool fails in a way worth trying again.
 * `timeout`: the tool passed its time limit; `transient`: the tool said its failure was passing (a
 * result or an error with `transient: true`). Per tool (`retryPolicy` on the tool), or per agent as
 * the default of its tools.
 */
export type ToolFailureKind = 'timeout' | 'transient';

export interface ToolRetryPolicy {
  /** Runs of the tool at most, the first included: 1 never tries again. */
  maxAttempts: number;
  /** The wait before the second run, on the runtime's clock; it doubles before each run after that. */
  backoffMs: number;
  /** The failures that are tried again. */
  on: readonly ToolFailureKind[];
  /**
   * After the last run timed out, the failed result goes to the model and the loop goes on (true, the
   * default); false ends the turn `failed` with `tool_timeout`.
   */
  continueLoop: boolean;
}

/** The longest single backoff a policy may ask for: ten minutes. */
const MAX_BACKOFF_MS = 600_000;

export const toolRetryPolicySchema = z.strictObject({
  maxAttempts: z.number().int().min(1).max(10),
  backoffMs: z.number().int().min(0).max(MAX_BACKOFF_MS),
  on: z.array(z.enum(['timeout', 'transient'])).min(1).max(2),
  continueLoop: z.boolean().optional(),
});

export type ToolRetryPolicyConfig = z.input<typeof toolRetryPolicySchema>;

/** A checked policy with its defaults filled in. */
export function resolveRetryPolicy(config: ToolRetryPolicyConfig): ToolRetryPolicy {
  const parsed = toolRetryPolicySchema.parse(config);
  return { maxAttempts: parsed.maxAttempts, backoffMs: parsed.backoffMs, on: [...new Set(parsed.on)], continueLoop: parsed.continueLoop ?? true };
}
