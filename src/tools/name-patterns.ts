import picomatch from 'picomatch';

/**
 * Tool-name patterns (issue 24): the globs of an agent's `tools` list and of permission rules.
 * picomatch globs with `{ dot: true }`, so `*` matches `__` and `.` too.
 *
 * The patterns come from a config file, so they are hostile input: picomatch compiles a glob to a
 * backtracking regex, and `*a*a*a*a*a*c` against a long name that almost matches costs
 * O(length^stars). The work is bounded by construction instead of by a timer:
 * - a pattern of only literals, `*` and `?` (every pattern the docs show) is matched by a
 *   wildcard matcher that is O(pattern × name) whatever the pattern;
 * - a pattern with other glob syntax (braces, classes, extglobs) goes through picomatch's regex,
 *   but may hold at most `MAX_REGEX_REPEATS` repeats, so its backtracking is at most
 *   O(name^MAX_REGEX_REPEATS);
 * - only the first `MAX_CHECKED_NAME` characters of a name are looked at by a glob: a longer name
 *   is matched by exact patterns alone.
 */

export const MAX_PATTERN_LENGTH = 200;
/** Longer tool names are matched by exact patterns only (MCP tool names are at most 64 + 2 + 64). */
export const MAX_CHECKED_NAME = 256;
/** `*`, `+` or `@(`-style repeats a pattern that needs picomatch's regex may hold. */
export const MAX_REGEX_REPEATS = 3;

const SIMPLE = /^[^[\]{}()!+@|\\]*$/;
const GLOB_CHARS = /[*?[\]{}()!+@|\\]/g;
const PICOMATCH = { dot: true, strictBrackets: true };

/** Why a pattern is refused, or null when it compiles within the bounds. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > MAX_PATTERN_LENGTH) return `a tool-name pattern has 1 to ${MAX_PATTERN_LENGTH} characters`;
  if (SIMPLE.test(pattern)) return null;
  const repeats = (pattern.match(/[*+]/g) ?? []).length;
  if (repeats > MAX_REGEX_REPEATS) {
    return `the pattern '${pattern}' uses braces, classes or extglobs and more than ${MAX_REGEX_REPEATS} '*' or '+'; split it into simpler patterns`;
  }
  try {
    picomatch.makeRe(pattern, PICOMATCH);
    return null;
  } catch (error) {
    return `the pattern '${pattern}' is not a glob picomatch can compile (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** A checked pattern, compiled: whether it is glob-free, how many of its characters are literal, and its matcher. */
export interface NamePattern {
  pattern: string;
  exact: boolean;
  /** Characters of the pattern that are not glob syntax: more of them is more specific. */
  literals: number;
  matches: (name: string) => boolean;
}

/** Compiles a pattern; one `patternProblem` refuses is refused here all the same (a throw). */
export function compileNamePattern(pattern: string): NamePattern {
  const problem = patternProblem(pattern);
  if (problem) throw new Error(problem);
  const exact = !picomatch.scan(pattern).isGlob;
  const literals = pattern.replace(GLOB_CHARS, '').length;
  return { pattern, exact, literals, matches: exact ? (name) => name === pattern : globMatcher(pattern) };
}

function globMatcher(pattern: string): (name: string) => boolean {
  if (SIMPLE.test(pattern)) return (name) => name.length <= MAX_CHECKED_NAME && wildcardMatch(pattern, name);
  const regex = picomatch.makeRe(pattern, PICOMATCH);
  return (name) => name.length <= MAX_CHECKED_NAME && regex.test(name);
}

/** Counts the steps of `wildcardMatch`, for the test that its work is bounded. */
export interface MatchMeter {
  steps: number;
}

/**
 * `*` (any run of characters, `/` and `.` included) and `?` (one character) against a name, with
 * one saved position to return to: each step moves the name forward or the saved star on, so the
 * work is at most (pattern + 1) × (name + 1) steps, never exponential.
 */
export function wildcardMatch(pattern: string, name: string, meter?: MatchMeter): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    if (meter) meter.steps += 1;
    if (p < pattern.length && (pattern[p] === '?' || (pattern[p] !== '*' && pattern[p] === name[n]))) {
      p += 1;
      n += 1;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p;
      resume = n;
      p += 1;
    } else if (star !== -1) {
      p = star + 1;
      resume += 1;
      n = resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p += 1;
  return p === pattern.length;
}
