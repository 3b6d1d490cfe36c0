import { describe, expect, it } from 'vitest';
import { TurnchartError, workspaceTools } from '../../src/index.js';

describe('workspaceTools', () => {
  it('builds the six tools with their effects', () => {
    expect(workspaceTools({ root: '.' }).map((t) => [t.name, t.effect])).toEqual([
      ['read_file', 'read'],
      ['list_dir', 'read'],
      ['grep', 'read'],
      ['write_file', 'write'],
      ['edit_file', 'write'],
      ['run_command', 'execute'],
    ]);
  });

  it('refuses bad options when built, not when a tool runs', () => {
    const bad = (options: object) => () => workspaceTools({ root: '.', ...options });
    expect(bad({ maxOutputChars: 0 })).toThrow(TurnchartError);
    expect(bad({ maxGrepMatches: 1.5 })).toThrow(TurnchartError);
    expect(bad({ maxOutputCharz: 10 })).toThrow(/maxOutputCharz/);
    expect(bad({ defaultTimeoutMs: 10_000, maxTimeoutMs: 5_000 })).toThrow('defaultTimeoutMs is larger than maxTimeoutMs');
    expect(() => workspaceTools({ root: '' })).toThrow(TurnchartError);
  });
});
