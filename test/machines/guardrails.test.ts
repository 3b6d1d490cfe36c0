import { describe, expect, it } from 'vitest';
import {
  breakRun,
  defaultLoopRules,
  detectCycle,
  FRESH_TRACKER,
  mistakesAfter,
  normalizeArguments,
  observeCall,
  signatureHash,
  tallyResult,
  EMPTY_TALLY,
  type LoopRules,
  type LoopTracker,
  type LoopVerdict,
} from '../../machines/guardrails.js';

/** The pure detectors of GR-1 / GR-2 on their own. */

function run(calls: Array<[string, Record<string, unknown>]>, rules: LoopRules): LoopVerdict[] {
  let tracker: LoopTracker = FRESH_TRACKER;
  return calls.map(([name, args]) => {
    const observed = observeCall(tracker, name, args, rules);
    tracker = observed.tracker;
    return observed.verdict;
  });
}

const verdicts = (v: LoopVerdict[]) => v.map((x) => (x ? `${x.rule}:${x.level}:${x.count}` : '-'));
const same = (n: number): Array<[string, Record<string, unknown>]> => Array.from({ length: n }, () => ['read', { path: 'a' }]);

describe('loop counting', () => {
  it('counts identical consecutive calls; the default rules stop at the threshold, with no hint', () => {
    expect(verdicts(run(same(3), defaultLoopRules(3)))).toEqual(['-', '-', 'loop:hard:3']);
  });

  it("hints once at the soft threshold and stops at the hard one ('cline': 3 and 5)", () => {
    expect(verdicts(run(same(5), { ...defaultLoopRules(5), soft: 3 }))).toEqual(['-', '-', 'loop:soft:3', '-', 'loop:hard:5']);
  });

  it('compares key-sorted arguments: key order is no difference', () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['read', { a: 1, b: 2 }],
      ['read', { b: 2, a: 1 }],
      ['read', { a: 1, b: 2 }],
    ];
    expect(verdicts(run(calls, defaultLoopRules(3)))).toEqual(['-', '-', 'loop:hard:3']);
  });

  it('a call that was not counted breaks the run', () => {
    const tracker = observeCall(observeCall(FRESH_TRACKER, 'read', { path: 'a' }, defaultLoopRules(3)).tracker, 'read', { path: 'a' }, defaultLoopRules(3)).tracker;
    expect(tracker.count).toBe(2);
    const broken = breakRun(tracker);
    expect(broken).toEqual(FRESH_TRACKER);
    expect(observeCall(broken, 'read', { path: 'a' }, defaultLoopRules(3)).tracker.count).toBe(1);
    expect(breakRun(FRESH_TRACKER)).toBe(FRESH_TRACKER);
  });
});

describe('cycle detection', () => {
  const h = (s: string) => s.split('');

  it('finds periods of 2 to 4 and counts whole repetitions', () => {
    expect(detectCycle(h('abab'))).toEqual({ period: 2, repetitions: 2, complete: true });
    expect(detectCycle(h('ababa'))).toEqual({ period: 2, repetitions: 2, complete: false });
    expect(detectCycle(h('xabcabcabc'))).toEqual({ period: 3, repetitions: 3, complete: true });
    expect(detectCycle(h('abcdabcd'))).toEqual({ period: 4, repetitions: 2, complete: true });
  });

  it('is no cycle: a run of one call, a single pass, a period of five', () => {
    expect(detectCycle(h('aaaa'))).toBeNull();
    expect(detectCycle(h('abc'))).toBeNull();
    expect(detectCycle(h('abcdeabcde'))).toBeNull();
  });

  it('hints at the soft repetition once and stops at the hard one; off by default', () => {
    const abab: Array<[string, Record<string, unknown>]> = ['a', 'b', 'a', 'b', 'a', 'b'].map((p) => ['read', { path: p }]);
    const rules = { ...defaultLoopRules(3), cycles: { soft: 2, hard: 3 } };
    expect(verdicts(run(abab, rules))).toEqual(['-', '-', '-', 'cycle:soft:2', '-', 'cycle:hard:3']);
    expect(verdicts(run(abab, defaultLoopRules(3)))).toEqual(['-', '-', '-', '-', '-', '-']);
  });

  it('keeps a bounded history of short hashes', () => {
    const rules = { ...defaultLoopRules(3), cycles: { soft: null, hard: 3 } };
    let tracker = FRESH_TRACKER;
    for (let i = 0; i < 100; i++) tracker = observeCall(tracker, 'read', { path: 'x'.repeat(10_000) + i }, rules).tracker;
    expect(tracker.recent).toHaveLength(12);
    expect(tracker.recent.every((hash) => hash.length < 20)).toBe(true);
    expect(signatureHash('a')).not.toBe(signatureHash('b'));
  });
});

describe('near-duplicate normalization', () => {
  it('squeezes whitespace, reads numeric strings as numbers, recurses', () => {
    expect(normalizeArguments({ q: '  hello \n  world ', n: '1.50', e: '1e3', arr: [' x ', '007'] })).toEqual({ q: 'hello world', n: 1.5, e: 1000, arr: ['x', 7] });
    expect(normalizeArguments({ keep: 'v1.5', n: 2.0, flag: true, none: null })).toEqual({ keep: 'v1.5', n: 2, flag: true, none: null });
  });

  it('makes near-duplicates one loop only when the rule is on', () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['grep', { pattern: 'foo  bar', limit: '10' }],
      ['grep', { limit: '10.0', pattern: ' foo bar' }],
      ['grep', { pattern: 'foo bar', limit: 10 }],
    ];
    expect(verdicts(run(calls, { ...defaultLoopRules(3), nearDuplicates: true }))).toEqual(['-', '-', 'loop:hard:3']);
    expect(verdicts(run(calls, defaultLoopRules(3)))).toEqual(['-', '-', '-']);
  });
});

describe('the mistake tally (GR-2)', () => {
  it('failures and denials count, successes reset, cancelled calls are neither', () => {
    let tally = tallyResult(EMPTY_TALLY, { status: 'failed', content: 'boom' });
    tally = tallyResult(tally, { status: 'denied', content: 'denied by rule: no' });
    tally = tallyResult(tally, { status: 'cancelled', content: 'x' });
    expect(tally).toEqual({ failed: 2, succeeded: 0, errors: ['boom', 'denied by rule: no'] });
    expect(mistakesAfter(4, tally)).toBe(5);
    expect(mistakesAfter(4, tallyResult(tally, { status: 'succeeded', content: 'ok' }))).toBe(0);
    expect(mistakesAfter(4, EMPTY_TALLY)).toBe(4);
  });

  it('keeps the first five errors, shortened', () => {
    let tally = EMPTY_TALLY;
    for (let i = 0; i < 8; i++) tally = tallyResult(tally, { status: 'failed', content: 'e'.repeat(1_000) });
    expect(tally.failed).toBe(8);
    expect(tally.errors).toHaveLength(5);
    expect(tally.errors[0]).toHaveLength(500);
  });
});
