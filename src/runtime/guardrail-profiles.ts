import { z } from 'zod';
import { DEFAULT_GUARDRAILS, type GuardrailLimits } from '../../machines/guardrails.js';

/**
 * GR-1 and GR-2 as configuration: an agent names a profile (`'default'`, `'cline'`) or gives an object
 * with an optional `profile` and overrides of any threshold. Validated with zod when the runtime is
 * created; a threshold that makes no sense (a hint at or after the stop) is refused there.
 */

export type GuardrailProfileName = 'default' | 'cline';

/** A profile: the loop's hard threshold beside the rest of the rules. */
interface Profile {
  loopStop: number;
  limits: GuardrailLimits;
}

const PROFILES: Record<GuardrailProfileName, Profile> = {
  // Seed 000: the third identical call ends the turn; GR-2's default breaker trips at six steps in a row whose calls all failed.
  default: { loopStop: 3, limits: DEFAULT_GUARDRAILS },
  // Seed 003: a recovery hint at the third identical call, the turn ends at the fifth; the breaker at six, as by default.
  cline: { loopStop: 5, limits: { ...DEFAULT_GUARDRAILS, loopHint: 3, loopAcrossTurns: true, mistakeLimit: 6 } },
};

/** When cycle detection is switched on with `true`: a hint at two repetitions of the sequence, a stop at three. */
const DEFAULT_CYCLES = { soft: 2, hard: 3 };

const MAX_MS = 2_147_483_647;

const overridesSchema = z
  .object({
    profile: z.enum(['default', 'cline']).optional(),
    loop: z
      .object({
        soft: z.number().int().min(2).max(100).nullable().optional(),
        hard: z.number().int().min(2).max(100).optional(),
        acrossTurns: z.boolean().optional(),
      })
      .strict()
      .optional(),
    cycles: z
      .union([
        z.boolean(),
        z
          .object({
            soft: z.number().int().min(2).max(20).nullable().optional(),
            hard: z.number().int().min(2).max(20).optional(),
          })
          .strict(),
      ])
      .optional(),
    nearDuplicates: z.boolean().optional(),
    mistakeLimit: z.number().int().min(1).max(100).nullable().optional(),
    stallTimeoutMs: z.number().int().min(1).max(MAX_MS).nullable().optional(),
    maxTurnTokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
  })
  .strict();

export const guardrailsSchema = z.union([z.enum(['default', 'cline']), overridesSchema]);

export type GuardrailsConfig = z.infer<typeof guardrailsSchema>;

/** What `onMistakeLimit` is told (GR-2); `signal` aborts when the turn is cancelled, times out or stops. */
export interface MistakeLimitContext {
  sessionId: string;
  turnId: string;
  /** Model steps in a row whose tool calls all failed. */
  count: number;
  /** The failed results of the last of those steps (the first few, shortened). */
  lastErrors: string[];
  signal: AbortSignal;
}

export type MistakeLimitDecision = { action: 'continue'; guidance: string } | { action: 'stop'; message: string };

export type OnMistakeLimit = (context: MistakeLimitContext) => MistakeLimitDecision | Promise<MistakeLimitDecision>;

export const onMistakeLimitSchema = z.custom<OnMistakeLimit>((v) => typeof v === 'function', 'a function');

/** The callback's answer is checked like any other input from outside. */
export const mistakeDecisionSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('continue'), guidance: z.string().min(1).max(16_000) }),
  z.object({ action: z.literal('stop'), message: z.string().min(1).max(16_000) }),
]);

export interface ResolvedGuardrails {
  /** The loop's hard threshold: the agent's `doomLoopThreshold`. */
  loopStop: number;
  limits: GuardrailLimits;
}

/**
 * An agent's rules: the named profile, then its overrides. An agent that names no guardrails keeps
 * its base agent's; `doomLoopThreshold` on the agent, when given, is the loop's hard threshold
 * unless `guardrails.loop.hard` says otherwise.
 */
export function resolveGuardrails(
  name: string,
  config: GuardrailsConfig | undefined,
  doomLoopThreshold: number | undefined,
  base: ResolvedGuardrails,
): ResolvedGuardrails {
  if (config === undefined) return { loopStop: doomLoopThreshold ?? base.loopStop, limits: base.limits };
  const overrides = typeof config === 'string' ? { profile: config } : config;
  const profile = PROFILES[overrides.profile ?? 'default'];
  const loopStop = overrides.loop?.hard ?? doomLoopThreshold ?? profile.loopStop;
  const limits: GuardrailLimits = {
    loopHint: overrides.loop?.soft === undefined ? profile.limits.loopHint : overrides.loop.soft,
    loopAcrossTurns: overrides.loop?.acrossTurns ?? profile.limits.loopAcrossTurns,
    cycles: cyclesOf(overrides.cycles, profile.limits.cycles),
    nearDuplicates: overrides.nearDuplicates ?? profile.limits.nearDuplicates,
    mistakeLimit: overrides.mistakeLimit === undefined ? profile.limits.mistakeLimit : overrides.mistakeLimit,
    maxTurnTokens: overrides.maxTurnTokens === undefined ? profile.limits.maxTurnTokens : overrides.maxTurnTokens,
    stallTimeoutMs: overrides.stallTimeoutMs === undefined ? profile.limits.stallTimeoutMs : overrides.stallTimeoutMs,
  };
  if (limits.loopHint !== null && limits.loopHint >= loopStop) {
    throw new Error(`agent '${name}': the loop hint (${limits.loopHint}) must come before the loop stop (${loopStop})`);
  }
  if (limits.cycles && limits.cycles.soft !== null && limits.cycles.soft >= limits.cycles.hard) {
    throw new Error(`agent '${name}': the cycle hint (${limits.cycles.soft}) must come before the cycle stop (${limits.cycles.hard})`);
  }
  return { loopStop, limits };
}

export const DEFAULT_RESOLVED: ResolvedGuardrails = { loopStop: PROFILES.default.loopStop, limits: PROFILES.default.limits };

function cyclesOf(given: boolean | { soft?: number | null; hard?: number } | undefined, fallback: GuardrailLimits['cycles']): GuardrailLimits['cycles'] {
  if (given === undefined) return fallback;
  if (given === false) return null;
  if (given === true) return DEFAULT_CYCLES;
  const hard = given.hard ?? DEFAULT_CYCLES.hard;
  // A stop given alone keeps the default hint only where it still comes first.
  const soft = given.soft !== undefined ? given.soft : DEFAULT_CYCLES.soft < hard ? DEFAULT_CYCLES.soft : null;
  return { soft, hard };
}
