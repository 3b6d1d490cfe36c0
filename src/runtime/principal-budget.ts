import type { PrincipalBudget } from '../../machines/turn.effects.js';
import { messageOf } from '../protocol/error-message.js';
import type { TokenUsage } from '../protocol/usage.js';
import type { RuntimeDeps, SessionEnv } from './session-env.js';

/**
 * Issue 25: each principal's input and output tokens per UTC day, counted in storage (so every host
 * of a cluster, and a host after a restart, counts the same) as model calls finish. The runtime
 * reads the count when a turn starts and hands it to the turn chart, whose guard ends a new turn
 * `budget_exhausted` once it is spent; a running turn is never cut short by it.
 */

const DAY_MS = 86_400_000;

/** The UTC day of an instant, as stored: `YYYY-MM-DD`. */
function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The principal whose budget the session's model calls draw on: null when no budget is set, the session has no principal, or an admin made it. */
function chargedPrincipal(deps: RuntimeDeps, env: SessionEnv): string | null {
  if (deps.dailyTokensPerPrincipal === null) return null;
  const { principal, quotaExempt } = env.config;
  return principal !== null && !quotaExempt ? principal : null;
}

/**
 * The principal's budget as a turn starts: null when none applies. A read that fails lets the turn
 * run (with a warning): the count is a quota, and the turn's own writes report a database that is away.
 */
export async function budgetAtStart(deps: RuntimeDeps, env: SessionEnv): Promise<PrincipalBudget | null> {
  const principal = chargedPrincipal(deps, env);
  if (principal === null) return null;
  const now = deps.now();
  try {
    const spent = await deps.storage.principalTokens(principal, utcDay(now));
    return { principal, limit: deps.dailyTokensPerPrincipal!, spent, resetsAtMs: (Math.floor(now / DAY_MS) + 1) * DAY_MS };
  } catch (error) {
    deps.warn(`could not read the daily token count of principal '${principal}'; the turn runs unchecked: ${messageOf(error)}`, { sessionId: env.config.id });
    return null;
  }
}

/**
 * Adds a finished model call's input and output tokens to the principal's count of the day, before
 * the turn goes on. A write that fails is a warning, not the turn's failure: those tokens go uncounted.
 */
export async function chargePrincipal(deps: RuntimeDeps, env: SessionEnv, usage: TokenUsage): Promise<void> {
  const principal = chargedPrincipal(deps, env);
  const tokens = usage.inputTokens + usage.outputTokens;
  if (principal === null || !(tokens > 0)) return;
  try {
    await deps.storage.addPrincipalTokens(principal, utcDay(deps.now()), tokens);
  } catch (error) {
    deps.warn(`could not add ${tokens} tokens to the daily count of principal '${principal}': ${messageOf(error)}`, { sessionId: env.config.id });
  }
}
