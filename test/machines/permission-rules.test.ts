import { describe, expect, it } from 'vitest';
import { compilePermissionRules, MAX_RULES, permissionRulesSchema } from '../../src/tools/permission-rules.js';
import { compileNamePattern, MAX_CHECKED_NAME, MAX_REGEX_REPEATS, patternProblem, wildcardMatch, type MatchMeter } from '../../src/tools/name-patterns.js';

describe('permission rules: which rule decides a tool name (issue 24)', () => {
  it('answers the matching rule, or null when none matches', () => {
    const rules = compilePermissionRules({ run_command: 'ask', 'github__*': 'allow', '*__delete*': 'deny' });
    expect(rules.decide('run_command')).toEqual({ pattern: 'run_command', decision: 'ask' });
    expect(rules.decide('github__list_issues')).toEqual({ pattern: 'github__*', decision: 'allow' });
    expect(rules.decide('read_file')).toBeNull();
  });

  it('lets `*` match across `__` and dots', () => {
    const rules = compilePermissionRules({ '*__delete*': 'deny', 'a*': 'allow' });
    expect(rules.decide('github__delete_repo')?.decision).toBe('deny');
    expect(rules.decide('x__y__delete')?.decision).toBe('deny');
    expect(rules.decide('a.b')?.decision).toBe('allow');
  });

  it('the most specific wins: more literal characters beats fewer', () => {
    const rules = compilePermissionRules({ '*__delete*': 'deny', 'github__*': 'allow', 'github__delete_*': 'ask' });
    // `github__delete_*` (15 literal characters) beats `github__*` and `*__delete*` (8 each)...
    expect(rules.decide('github__delete_repo')).toEqual({ pattern: 'github__delete_*', decision: 'ask' });
    // ...and between those two, at a tie of 8, the stricter wins.
    expect(rules.decide('github__deleteall')).toEqual({ pattern: '*__delete*', decision: 'deny' });
    expect(rules.decide('gitlab__delete_repo')).toEqual({ pattern: '*__delete*', decision: 'deny' });
  });

  it('an exact pattern beats any glob, however long the glob', () => {
    const rules = compilePermissionRules({ 'github__delete_repo*': 'deny', github__delete_repo: 'allow' });
    expect(rules.decide('github__delete_repo')).toEqual({ pattern: 'github__delete_repo', decision: 'allow' });
    expect(rules.decide('github__delete_repos')).toEqual({ pattern: 'github__delete_repo*', decision: 'deny' });
  });

  it('at a tie the stricter wins: deny over ask over allow', () => {
    expect(compilePermissionRules({ 'ab*': 'allow', '*ab': 'deny' }).decide('ab')?.decision).toBe('deny');
    expect(compilePermissionRules({ 'ab*': 'ask', '*ab': 'allow' }).decide('ab')?.decision).toBe('ask');
    expect(compilePermissionRules({ 'a?': 'allow', '?b': 'ask' }).decide('ab')?.decision).toBe('ask');
  });

  it("later layers win for the same pattern: an agent's rule over the host's", () => {
    const rules = compilePermissionRules({ 'github__*': 'allow', run_command: 'ask' }, { 'github__*': 'deny' });
    expect(rules.decide('github__x')?.decision).toBe('deny');
    expect(rules.decide('run_command')?.decision).toBe('ask');
    expect(compilePermissionRules(undefined, {}).empty).toBe(true);
  });

  it('handles braces and classes through picomatch', () => {
    const rules = compilePermissionRules({ '{read,list}_*': 'allow', 'run_[ab]': 'deny' });
    expect(rules.decide('list_dir')?.decision).toBe('allow');
    expect(rules.decide('run_a')?.decision).toBe('deny');
    expect(rules.decide('run_c')).toBeNull();
  });
});

describe('hostile patterns', () => {
  it('the schema refuses too many rules, too long patterns, and patterns picomatch cannot compile', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_RULES + 1 }, (_, i) => [`tool_${i}`, 'allow']));
    expect(permissionRulesSchema.safeParse(many).success).toBe(false);
    expect(permissionRulesSchema.safeParse({ ['a'.repeat(201)]: 'allow' }).success).toBe(false);
    expect(permissionRulesSchema.safeParse({ 'run_[ab': 'deny' }).success).toBe(false);
    expect(permissionRulesSchema.safeParse({ '': 'deny' }).success).toBe(false);
    expect(permissionRulesSchema.safeParse({ x: 'maybe' }).success).toBe(false);
    expect(permissionRulesSchema.safeParse({ 'github__*': 'allow', '*__delete*': 'deny' }).success).toBe(true);
  });

  it(`refuses a brace, class or extglob pattern with more than ${MAX_REGEX_REPEATS} repeats: its regex could backtrack too long`, () => {
    expect(patternProblem('{a,b}*x*y*z*')).toMatch(/more than 3/);
    expect(patternProblem('+(a|aa)+(a|aa)+(a|aa)+(a|aa)b')).toMatch(/more than 3/);
    expect(patternProblem('{a,b}*x*')).toBeNull();
    // Literals, `*` and `?` take the linear matcher, however many stars.
    expect(patternProblem('*a*a*a*a*a*a*a*a*b')).toBeNull();
    expect(() => compileNamePattern('run_[ab')).toThrow(/picomatch/);
  });

  it('matches a pathological pattern against a long name in at most (pattern + 1) × (name + 1) steps', () => {
    const pattern = `${'*a'.repeat(50)}*b`;
    const name = 'a'.repeat(MAX_CHECKED_NAME);
    const meter: MatchMeter = { steps: 0 };
    expect(wildcardMatch(pattern, name, meter)).toBe(false);
    expect(meter.steps).toBeLessThanOrEqual((pattern.length + 1) * (name.length + 1));
    const near = `${'*a'.repeat(8)}*c`;
    const nearMeter: MatchMeter = { steps: 0 };
    expect(wildcardMatch(near, `${'a'.repeat(200)}cx`, nearMeter)).toBe(false);
    expect(nearMeter.steps).toBeLessThanOrEqual((near.length + 1) * 203);
  });

  it('agrees with the glob meaning of `*` and `?`', () => {
    expect(wildcardMatch('a*b?d', 'axxbcd')).toBe(true);
    expect(wildcardMatch('a*b?d', 'axxbd')).toBe(false);
    expect(wildcardMatch('*', 'anything__at_all')).toBe(true);
    expect(wildcardMatch('a**', 'a')).toBe(true);
    expect(wildcardMatch('*x', 'xax')).toBe(true);
    expect(wildcardMatch('*x', 'xa')).toBe(false);
  });

  it(`looks at names of at most ${MAX_CHECKED_NAME} characters with globs; a longer one is decided by an exact rule alone`, () => {
    const long = 'a'.repeat(MAX_CHECKED_NAME + 1);
    expect(compilePermissionRules({ '*': 'deny' }).decide(long)).toBeNull();
    expect(compilePermissionRules({ '*': 'deny', [long.slice(0, 200)]: 'allow' }).decide(long)).toBeNull();
    expect(compilePermissionRules({ '*': 'deny' }).decide('a'.repeat(MAX_CHECKED_NAME))?.decision).toBe('deny');
  });
});
