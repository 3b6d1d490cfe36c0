import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/tools/workspace/glob.js';

describe('globToRegExp (grep include)', () => {
  it('matches whole names with *, ? and {a,b}', () => {
    const ts = globToRegExp('*.ts');
    expect(['a.ts', '.ts', 'x.test.ts'].every((n) => ts.test(n))).toBe(true);
    expect(['a.tsx', 'a.ts.bak', 'ats'].some((n) => ts.test(n))).toBe(false);
    expect(globToRegExp('?.md').test('a.md')).toBe(true);
    expect(globToRegExp('?.md').test('ab.md')).toBe(false);
    const either = globToRegExp('*.{ts,tsx}');
    expect(['a.ts', 'a.tsx'].every((n) => either.test(n))).toBe(true);
    expect(either.test('a.js')).toBe(false);
  });

  it('takes regex characters and an unclosed brace literally', () => {
    expect(globToRegExp('a+b(1).[x]').test('a+b(1).[x]')).toBe(true);
    expect(globToRegExp('a+b(1).[x]').test('aab(1)x')).toBe(false);
    expect(globToRegExp('{a,b').test('{a,b')).toBe(true);
  });
});
