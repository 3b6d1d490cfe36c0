/**
 * Permission rules (issue 24): what a rule says about the tools whose names its pattern matches.
 * The vocabulary only — the tool-call chart reads a call's matched rule from its context, and the
 * matcher that finds it lives with the tools (src/tools/permission-rules.ts).
 */
export type RuleDecision = 'allow' | 'ask' | 'deny';

/** Rules by tool-name pattern (`{ "run_command": "ask", "github__*": "allow", "*__delete*": "deny" }`). */
export type PermissionRules = Record<string, RuleDecision>;

/** The rule that decides one tool name: the most specific matching pattern, and what it says. */
export interface MatchedRule {
  pattern: string;
  decision: RuleDecision;
}

/** How a rule is named in results and the audit: `'github__*: deny'`. */
export function ruleLabel(rule: MatchedRule): string {
  return `${rule.pattern}: ${rule.decision}`;
}
