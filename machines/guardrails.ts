import type { ToolResult } from '../src/protocol/tool-result.js';
import type { GuardrailRule } from '../src/protocol/updates.js';
import { stableStringify } from './signature.js';

/**
 * GR-1 / GR-2 as pure functions the charts call from their guards and assigns: the loop and cycle
 * detectors over consecutive tool calls, the near-duplicate normalization, and the per-step tally
 * of the mistake breaker. Everything here is plain data in, plain data out, so the charts' context
 * stays serializable and an inspector sees each verdict.
 */

/** What an agent's profile says about repeated calls, as chart data. */
export interface LoopRules {
  /** Identical consecutive calls that earn the call a recovery hint; null for none. */
  soft: number | null;
  /** Identical consecutive calls that end the turn `doom_loop` (RT-14). */
  hard: number;
  /** Repetitions of a sequence of 2–4 calls: a hint at `soft`, the turn ends at `hard`; null when off. */
  cycles: { soft: number | null; hard: number } | null;
  /** Compare arguments after normalizing whitespace and number formatting (key order always is). */
  nearDuplicates: boolean;
}

/** The run of consecutive calls as the detectors see it; carried from call to call by the turn. */
export interface LoopTracker {
  /**
   * The hash of the last counted call's signature (name + key-sorted, maybe normalized, arguments):
   * the tracker is stored with the session (GR-2a), so it holds hashes, not whole arguments.
   */
  signature: string | null;
  /** How many identical calls in a row end with it. */
  count: number;
  /** Hashes of the latest signatures, oldest first; empty unless cycle detection is on. */
  recent: string[];
  /** RT-14: `wait_agent` calls in a row that timed out (waits are not counted as repeats, their timeouts are). */
  waitTimeouts: number;
}

export type LoopVerdict = {
  rule: 'loop' | 'cycle';
  level: 'soft' | 'hard';
  /** Identical calls in a row (`loop`) or repetitions of the sequence (`cycle`). */
  count: number;
  /** The sequence's length, for a cycle. */
  period: number;
} | null;

export const FRESH_TRACKER: LoopTracker = { signature: null, count: 0, recent: [], waitTimeouts: 0 };

/** What a rule that fired reports: the params of the `emitGuardrailTriggered` action both charts name (the runtime's `guardrail_triggered` update). */
export interface GuardrailTriggered {
  rule: GuardrailRule;
  level: 'soft' | 'hard';
  toolName?: string;
  count: number;
}

/**
 * GR-2a: what the guardrails remember between a session's turns. Seed 003 keeps both trackers in the
 * session, outliving any one run: the turn starts from the session's, gives them back as it ends,
 * and the session stores them with the turn's terminal status, so a restart keeps them too. Nothing
 * resets the mistake count but the seed's own rules: a step with a success or `onMistakeLimit`'s
 * `continue` clears it. The loop tracker carries across turns under profiles with
 * `loopAcrossTurns` (seed 003's), where only a different call ends a run of identical calls
 * (`observeCall`); seed 000's doom loop (the default profile) counts the calls of one turn.
 */
export interface GuardrailTrackers {
  loop: LoopTracker;
  /** Model steps in a row whose tool calls all failed. */
  mistakes: number;
}

export const FRESH_TRACKERS: GuardrailTrackers = { loop: FRESH_TRACKER, mistakes: 0 };

/** The rules of the default profile (seed 000): the turn ends at the third identical call, nothing else. */
export function defaultLoopRules(hard: number): LoopRules {
  return { soft: null, hard, cycles: null, nearDuplicates: false };
}

const MIN_PERIOD = 2;
const MAX_PERIOD = 4;

/** A call that was not counted (unknown tool, arguments not an object or failing the schema) breaks any run. */
export function breakRun(tracker: LoopTracker): LoopTracker {
  return tracker.signature === null && tracker.recent.length === 0 && tracker.waitTimeouts === 0 ? tracker : FRESH_TRACKER;
}

/**
 * RT-14: a `wait_agent` call is not one of a run of identical calls — waiting again for a child is
 * no loop — but it is a different call from the ones before it, so it ends their run. What it keeps
 * is the count of waits in a row that timed out, which its own result then moves.
 */
export function passWait(tracker: LoopTracker): LoopTracker {
  return tracker.signature === null && tracker.recent.length === 0 ? tracker : { signature: null, count: 0, recent: [], waitTimeouts: tracker.waitTimeouts };
}

/** A wait that timed out is one more in a row; a wait that got its answer ends the row. */
export function afterWait(tracker: LoopTracker, timedOut: boolean): LoopTracker {
  return { signature: tracker.signature, count: tracker.count, recent: tracker.recent, waitTimeouts: timedOut ? tracker.waitTimeouts + 1 : 0 };
}

/** Counts one valid call and says whether it reached a threshold. */
export function observeCall(tracker: LoopTracker, name: string, args: Record<string, unknown>, rules: LoopRules): { tracker: LoopTracker; verdict: LoopVerdict } {
  const signature = signatureHash(`${name}:${stableStringify(rules.nearDuplicates ? normalizeArguments(args) : args)}`);
  const count = signature === tracker.signature ? tracker.count + 1 : 1;
  const recent = rules.cycles ? remember(tracker.recent, signature, MAX_PERIOD * rules.cycles.hard) : tracker.recent;
  // Any counted call between two waits ends their row of timeouts.
  const next: LoopTracker = { signature, count, recent, waitTimeouts: 0 };
  return { tracker: next, verdict: verdictOf(next, rules) };
}

/** The strongest verdict: a stop before a hint, a run of identical calls before a cycle. */
function verdictOf(tracker: LoopTracker, rules: LoopRules): LoopVerdict {
  const cycle = rules.cycles ? detectCycle(tracker.recent) : null;
  if (tracker.count >= rules.hard) return { rule: 'loop', level: 'hard', count: tracker.count, period: 1 };
  if (cycle && rules.cycles && cycle.repetitions >= rules.cycles.hard) return { rule: 'cycle', level: 'hard', count: cycle.repetitions, period: cycle.period };
  if (rules.soft !== null && tracker.count === rules.soft) return { rule: 'loop', level: 'soft', count: tracker.count, period: 1 };
  if (cycle?.complete && rules.cycles?.soft === cycle.repetitions) return { rule: 'cycle', level: 'soft', count: cycle.repetitions, period: cycle.period };
  return null;
}

function remember(recent: readonly string[], hash: string, keep: number): string[] {
  const next = recent.length >= keep ? recent.slice(recent.length - keep + 1) : recent.slice();
  next.push(hash);
  return next;
}

/**
 * The longest repetition of a sequence of 2–4 calls that the history ends with: A,B,A,B is two
 * repetitions of a period of 2. A sequence of one call repeated is the loop rule's, not a cycle.
 * `complete` says the latest call finished a repetition (A,B,A,B,A has two, the third under way).
 */
export function detectCycle(recent: readonly string[]): { period: number; repetitions: number; complete: boolean } | null {
  let best: { period: number; repetitions: number; complete: boolean } | null = null;
  for (let period = MIN_PERIOD; period <= MAX_PERIOD && period < recent.length; period++) {
    const tail = recent.slice(recent.length - period);
    if (tail.every((h) => h === tail[0])) continue;
    let matching = 0;
    for (let i = recent.length - 1; i - period >= 0 && recent[i] === recent[i - period]; i--) matching++;
    const covered = matching + period;
    const repetitions = Math.floor(covered / period);
    if (repetitions >= 2 && (!best || repetitions > best.repetitions)) best = { period, repetitions, complete: covered % period === 0 };
  }
  return best;
}

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Near-duplicate arguments compare equal after this: strings trimmed with inner whitespace runs
 * made one space, numeric strings as the number they write (`"1.50"`, `" 1.5"` and `1.5` are one
 * value), numbers as JSON prints them; key order is already ignored by the signature.
 */
export function normalizeArguments(value: unknown): unknown {
  if (typeof value === 'string') {
    const squeezed = value.trim().replace(/\s+/g, ' ');
    return NUMERIC.test(squeezed) && Number.isFinite(Number(squeezed)) ? Number(squeezed) : squeezed;
  }
  if (Array.isArray(value)) return value.map(normalizeArguments);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) out[key] = normalizeArguments(inner);
    return out;
  }
  return value;
}

/** A short, stable hash of a signature (FNV-1a, two 32-bit lanes): the trackers hold these, not whole arguments. */
export function signatureHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0).toString(36) + '.' + (b >>> 0).toString(36);
}

/** The recovery hint appended to the result of the call that reached a soft threshold (the call still ran). */
export function recoveryHint(verdict: NonNullable<LoopVerdict>, toolName: string): string {
  const lead =
    verdict.rule === 'loop'
      ? `[guardrail] This is call ${verdict.count} in a row of '${toolName}' with the same arguments; repeating it will not give a different result.`
      : `[guardrail] The last ${verdict.count * verdict.period} tool calls repeat the same sequence of ${verdict.period} calls ${verdict.count} times.`;
  return `\n\n${lead} Try another approach or other arguments, or answer with what you have.`;
}

/** What the call that reached a hard threshold gets as its result, and why the turn ended. */
export function stopReason(verdict: NonNullable<LoopVerdict>, toolName: string): { result: string; message: string } {
  if (verdict.rule === 'loop') {
    return { result: `doom loop detected for tool '${toolName}'`, message: `'${toolName}' was called ${verdict.count} times in a row with the same arguments` };
  }
  return {
    result: `doom loop detected: a sequence of ${verdict.period} tool calls repeated ${verdict.count} times`,
    message: `the same sequence of ${verdict.period} tool calls was repeated ${verdict.count} times in a row (last: '${toolName}')`,
  };
}

/** GR-2: what one model step's tool calls came to. */
export interface StepTally {
  failed: number;
  succeeded: number;
  /** The failed results' texts, the first few, shortened: what `onMistakeLimit` gets as `lastErrors`. */
  errors: string[];
}

export const EMPTY_TALLY: StepTally = { failed: 0, succeeded: 0, errors: [] };

const KEPT_ERRORS = 5;
const ERROR_CHARS = 500;

/** Errors, invalid arguments, unknown tools and rule denials are failures; a cancelled or unknown end is neither. */
export function tallyResult(tally: StepTally, result: ToolResult): StepTally {
  if (result.status === 'succeeded') return { failed: tally.failed, succeeded: tally.succeeded + 1, errors: tally.errors };
  if (result.status !== 'failed' && result.status !== 'denied') return tally;
  const errors = tally.errors.length < KEPT_ERRORS ? [...tally.errors, result.content.slice(0, ERROR_CHARS)] : tally.errors;
  return { failed: tally.failed + 1, succeeded: tally.succeeded, errors };
}

/** A step whose calls all failed is one more mistake in a row; any success resets the count. */
export function mistakesAfter(mistakes: number, tally: StepTally): number {
  if (tally.succeeded > 0) return 0;
  return tally.failed > 0 ? mistakes + 1 : mistakes;
}

/**
 * GR-2: the breaker trips as a mistake is counted (seed 003 decides when it records one), so only
 * right after a step whose calls all failed. A count carried over from earlier turns at or past the
 * limit (a `stop` leaves it there) trips at this turn's next mistake, not before its first model call.
 */
export function mistakeLimitReached(mistakes: number, step: StepTally, limit: number | null): boolean {
  return limit !== null && mistakes >= limit && step.failed > 0 && step.succeeded === 0;
}

/**
 * Seed 003's stop without a callback (its `buildMistakeLimitStopMessage`): the run ends with an
 * answer saying why, in the assistant's voice, quoting the last errors so the user can act on them.
 */
export function mistakeLimitStopMessage(count: number, lastErrors: readonly string[]): string {
  const lead = `I stopped after ${count} steps in a row in which every tool call failed: going on the same way would not help.`;
  if (lastErrors.length === 0) return `${lead} Please tell me how to proceed.`;
  const errors = lastErrors.map((e) => `- ${e.replace(/\s+/g, ' ').trim()}`).join('\n');
  return `${lead} Please look at the last errors, then tell me how to proceed:\n${errors}`;
}

/**
 * An agent's guardrail profile as the turn chart reads it (the loop's hard threshold is the
 * agent's `doomLoopThreshold`, in `TurnLimits`). Null switches a rule off.
 */
export interface GuardrailLimits {
  /** Identical consecutive calls that earn a recovery hint. */
  loopHint: number | null;
  /**
   * Whether a run of identical calls goes on across the session's turns (seed 003's detector lives
   * in the session) or starts afresh with each turn (seed 000's doom loop counts one turn's calls:
   * a user who asks three times for the same file is not looping).
   */
  loopAcrossTurns: boolean;
  cycles: LoopRules['cycles'];
  nearDuplicates: boolean;
  /** Consecutive model steps whose tool calls all failed before `onMistakeLimit` decides (GR-2). */
  mistakeLimit: number | null;
  /** Tokens the turn's model calls may report, summed, before one last call without tools. */
  maxTurnTokens: number | null;
  /** A turn with no update for this long fails `stalled`. */
  stallTimeoutMs: number | null;
}

/** The default profile: the loop's hard stop (seed 000) and the mistake breaker at GR-2's default of six. */
export const DEFAULT_GUARDRAILS: GuardrailLimits = {
  loopHint: null,
  loopAcrossTurns: false,
  cycles: null,
  nearDuplicates: false,
  mistakeLimit: 6,
  maxTurnTokens: null,
  stallTimeoutMs: null,
};

/** The loop rules of a turn's limits; limits without a profile are the default profile's. */
export function loopRulesOf(limits: { doomLoopThreshold: number; guardrails?: GuardrailLimits }): LoopRules {
  const g = limits.guardrails;
  if (!g) return defaultLoopRules(limits.doomLoopThreshold);
  return { soft: g.loopHint, hard: limits.doomLoopThreshold, cycles: g.cycles, nearDuplicates: g.nearDuplicates };
}
