import { describe, expect, it } from 'vitest';
import { NameGlob } from '../../src/tools/workspace/glob.js';

const matches = (glob: string, name: string) => new NameGlob(glob).matches(name);

describe('NameGlob (grep include)', () => {
  it('matches whole names with *, ? and {a,b}', () => {
    const ts = new NameGlob('*.ts');
    expect(['a.ts', '.ts', 'x.test.ts'].every((n) => ts.matches(n))).toBe(true);
    expect(['a.tsx', 'a.ts.bak', 'ats'].some((n) => ts.matches(n))).toBe(false);
    expect(matches('?.md', 'a.md')).toBe(true);
    expect(matches('?.md', 'ab.md')).toBe(false);
    const either = new NameGlob('*.{ts,tsx}');
    expect(['a.ts', 'a.tsx'].every((n) => either.matches(n))).toBe(true);
    expect(either.matches('a.js')).toBe(false);
  });

  it('takes regex characters and an unclosed brace literally', () => {
    expect(matches('a+b(1).[x]', 'a+b(1).[x]')).toBe(true);
    expect(matches('a+b(1).[x]', 'aab(1)x')).toBe(false);
    expect(matches('{a,b', '{a,b')).toBe(true);
    expect(matches('{a,b', 'a')).toBe(false);
  });

  it('handles empty alternatives, stars inside braces, several groups and characters beyond the BMP', () => {
    expect(matches('x{,.bak}', 'x')).toBe(true);
    expect(matches('x{,.bak}', 'x.bak')).toBe(true);
    expect(matches('{*.ts,README*}', 'README.md')).toBe(true);
    expect(matches('{a,b}{c,d}.txt', 'bd.txt')).toBe(true);
    expect(matches('{a,b}{c,d}.txt', 'bb.txt')).toBe(false);
    expect(matches('?.txt', '😀.txt')).toBe(true);
    expect(matches('*', '')).toBe(true);
    expect(matches('?', '')).toBe(false);
    expect(matches('', '')).toBe(true);
    expect(matches('', 'a')).toBe(false);
  });

  it('agrees with a backtracking matcher on every small glob and name', () => {
    const alphabet = ['a', 'b', '*', '?', '{', '}', ','];
    const names = ['', 'a', 'b', 'ab', 'ba', 'aab', 'abab', 'bba', '{a', 'a,b'];
    for (const glob of strings(alphabet, 4)) {
      const glob$ = new NameGlob(glob);
      for (const name of names) expect(glob$.matches(name), `${glob} ~ ${name}`).toBe(reference(glob).test(name));
    }
  });

  // The probe's glob: as `^.*a.*a.*a.*a.*a.*a.*b$` it held the host's thread for about 230 s on one
  // long name. Here it is one pass over the name per star, so the test ends at once, or times out.
  it('matches a glob of many stars against a long name without backtracking', () => {
    const glob = new NameGlob('*a'.repeat(90) + '*b');
    expect(glob.matches('a'.repeat(255))).toBe(false);
    expect(glob.matches('a'.repeat(254) + 'b')).toBe(true);
  });
});

/** The translation grep used before, as a reference for small inputs only (it backtracks). */
function reference(glob: string): RegExp {
  const chars = [...glob];
  let source = '';
  let inBraces = false;
  chars.forEach((char, i) => {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '{' && !inBraces && chars.indexOf('}', i) !== -1) [source, inBraces] = [source + '(?:', true];
    else if (char === '}' && inBraces) [source, inBraces] = [source + ')', false];
    else if (char === ',' && inBraces) source += '|';
    else source += char.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
  });
  return new RegExp(`^${source}$`, 'su');
}

function strings(alphabet: string[], maxLength: number): string[] {
  const out = [''];
  let layer = [''];
  for (let n = 0; n < maxLength; n += 1) {
    layer = layer.flatMap((prefix) => alphabet.map((char) => prefix + char));
    out.push(...layer);
  }
  return out;
}
