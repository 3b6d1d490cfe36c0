import { z } from 'zod';
import type { MatchedRule, PermissionRules, RuleDecision } from '../protocol/permission-rule.js';
import { compileNamePattern, MAX_PATTERN_LENGTH, patternProblem, type NamePattern } from './name-patterns.js';

/**
 * Permission rules (issue 24): which rule decides a tool name. Pure — no I/O — and compiled once per
 * rule set; the patterns are bounded tool-name globs (src/tools/name-patterns.ts). Among the rules
 * that match, the most specific wins: an exact (glob-free) pattern beats any glob; among globs, more
 * literal characters wins; at a tie, the stricter (deny, then ask, then allow).
 */

export const MAX_RULES = 200;

export const permissionRulesSchema = z
  .record(z.string().min(1).max(MAX_PATTERN_LENGTH), z.enum(['allow', 'ask', 'deny']))
  .check((ctx) => {
    const patterns = Object.keys(ctx.value);
    if (patterns.length > MAX_RULES) ctx.issues.push({ code: 'custom', message: `at most ${MAX_RULES} permission rules`, input: ctx.value });
    for (const pattern of patterns) {
      const problem = patternProblem(pattern);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: pattern, path: [pattern] });
    }
  });

/** The rules that decide tool names, compiled: `decide(name)` answers the rule that wins, or null. */
export interface PermissionRuleSet {
  readonly empty: boolean;
  decide(name: string): MatchedRule | null;
}

interface CompiledRule extends NamePattern {
  decision: RuleDecision;
}

const STRICTNESS: Record<RuleDecision, number> = { allow: 0, ask: 1, deny: 2 };
/** Names decided so far, per rule set; tool names are few, but a hostile model may invent many. */
const MEMO_LIMIT = 1_024;

const NO_RULES: PermissionRuleSet = { empty: true, decide: () => null };

/**
 * Later layers over earlier ones — an agent's rules over the host-wide ones: the later rule for the
 * same pattern wins. The patterns are assumed checked (`permissionRulesSchema`); one that is not is
 * refused here all the same.
 */
export function compilePermissionRules(...layers: (PermissionRules | undefined)[]): PermissionRuleSet {
  const merged = new Map<string, RuleDecision>();
  for (const layer of layers) if (layer) for (const [pattern, decision] of Object.entries(layer)) merged.set(pattern, decision);
  if (merged.size === 0) return NO_RULES;
  const rules: CompiledRule[] = [...merged].map(([pattern, decision]) => ({ ...compileNamePattern(pattern), decision }));
  const memo = new Map<string, MatchedRule | null>();
  return {
    empty: false,
    decide(name) {
      const known = memo.get(name);
      if (known !== undefined) return known;
      const decided = winner(rules, name);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(name, decided);
      return decided;
    },
  };
}

function winner(rules: readonly CompiledRule[], name: string): MatchedRule | null {
  let best: CompiledRule | null = null;
  for (const rule of rules) {
    if (!rule.matches(name)) continue;
    if (!best || moreSpecific(rule, best)) best = rule;
  }
  return best && { pattern: best.pattern, decision: best.decision };
}

function moreSpecific(a: CompiledRule, b: CompiledRule): boolean {
  if (a.exact !== b.exact) return a.exact;
  if (a.literals !== b.literals) return a.literals > b.literals;
  return STRICTNESS[a.decision] > STRICTNESS[b.decision];
}
