import { describe, expect, it } from 'vitest';
import { chatSettings } from '../../src/cli/chat.js';
import { formatContext, formatGuardrail, formatOutcome, summarizeArguments } from '../../src/cli/chat-format.js';

describe('chat formatting', () => {
  it('summarizes tool arguments on one line: the command, path or pattern first, long texts as their length', () => {
    expect(summarizeArguments('{"command":"sleep 600 # x","timeoutMs":5000}')).toBe('sleep 600 # x, timeoutMs: 5000');
    expect(summarizeArguments(JSON.stringify({ path: 'a.md', content: 'x'.repeat(500) }))).toBe('a.md, content: 500 chars');
    expect(summarizeArguments(JSON.stringify({ plan: [{}, {}], explanation: 'why' }))).toBe('plan: 2 items, explanation: why');
    expect(summarizeArguments(JSON.stringify({ command: 'echo one\necho two' }))).toBe('echo one ⏎ echo two');
    expect(summarizeArguments('not json')).toBe('not json');
    expect(summarizeArguments(JSON.stringify({ command: 'y'.repeat(200) }), 20)).toBe(`${'y'.repeat(19)}…`);
  });

  it('draws the context window as a bar: each region at least one cell, the auto-compact line marked', () => {
    const [bar, legend, line] = formatContext(
      { system: 100, conversation: 50_000, tools: 1_000, reservedOutput: 8_192, autoCompactLine: 101_837, window: 128_000, percentUsed: 58.2 },
      undefined,
      40,
    );
    expect(bar).toBe(`context █${'▓'.repeat(15)}▒${'░'.repeat(2)}${'·'.repeat(13)}│${'·'.repeat(7)} 58.2% of the auto-compact line`);
    expect(legend).toContain('conversation 50,000');
    expect(line).toContain('auto-compact at 101,837 of a 128,000-token window (input 51,100)');
  });

  it('says how a turn ended on one line', () => {
    expect(formatOutcome({ status: 'failed', code: 'model_error', message: 'boom\nmore' })).toBe('✗ failed [model_error] boom ⏎ more');
    expect(formatOutcome({ status: 'cancelled' })).toBe('✗ cancelled');
    expect(formatOutcome({ status: 'completed', finalText: 'x', stoppedBy: 'token_budget' })).toBe('✓ completed, stopped early by the token budget');
    expect(formatOutcome({ status: 'failed', code: 'stalled', message: 'the turn made no progress for 500 ms' })).toBe('✗ failed [stalled] the turn made no progress for 500 ms');
  });
});

describe('chat settings', () => {
  it('takes a host from --url or TURNCHART_URL, and the embedded flags otherwise', () => {
    expect(chatSettings(['--url', 'http://127.0.0.1:4477', '--token', 't'], {})).toMatchObject({ url: 'http://127.0.0.1:4477', token: 't' });
    expect(chatSettings([], { TURNCHART_URL: 'http://h:1', TURNCHART_TOKEN: 't', TURNCHART_DB: 'x.db' })).toMatchObject({ url: 'http://h:1', token: 't' });
    // A token in the environment (say, for `serve`) is not used by the embedded chat.
    const embedded = chatSettings(['--db', 'x.db', '--mode', 'auto'], { TURNCHART_TOKEN: 't', TURNCHART_URL: '' });
    expect(embedded).toMatchObject({ db: 'x.db', mode: 'auto' });
    expect(embedded.url).toBeUndefined();
    expect(embedded.token).toBeUndefined();
  });

  it('refuses flags that do not go together, and bad values', () => {
    expect(() => chatSettings(['--url', 'http://h:1', '--db', 'x.db'], {})).toThrow('--db applies only to the embedded chat');
    expect(() => chatSettings(['--token', 't'], {})).toThrow('--token only applies with --url');
    expect(() => chatSettings(['--url', 'ftp://h'], {})).toThrow();
    expect(() => chatSettings(['--mode', 'yolo'], {})).toThrow();
    expect(() => chatSettings(['--bogus'], {})).toThrow();
  });

  it('says which guardrail a turn met, one line each', () => {
    expect(formatGuardrail({ type: 'guardrail_triggered', rule: 'loop', level: 'soft', toolName: 'read_file', count: 3 })).toBe(
      "  ! guardrail: 'read_file' called 3 times in a row with the same arguments — a hint was given",
    );
    expect(formatGuardrail({ type: 'guardrail_triggered', rule: 'mistake_limit', level: 'hard', count: 6 })).toBe('  ! guardrail: 6 steps in a row where every tool call failed');
  });
});
