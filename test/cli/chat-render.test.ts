import { styleText } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { ChatNotice } from '../../machines/chat-client.effects.js';
import { APPROVAL_PROMPT, EMPTY_VIEW, INPUT_PROMPT, render, type Print, type RenderStyle, type RenderView } from '../../src/cli/chat-render.js';
import { plain } from '../../src/cli/chat-format.js';
import { UPDATE_VERSION, type SessionUpdate } from '../../src/protocol/updates.js';

const PLAIN: RenderStyle = { paint: plain, color: false };
const STYLED: RenderStyle = { paint: (format, text) => styleText(format, text), color: true };

let sequence = 0;
function update(update: SessionUpdate, facts: { call?: string; startedElsewhere?: boolean } = {}): ChatNotice {
  sequence += 1;
  return {
    kind: 'update',
    envelope: { version: UPDATE_VERSION, sessionId: 'ses_1', turnId: 'turn_1', sequence, occurredAtMs: 0, update },
    call: facts.call === undefined ? null : { argumentsText: facts.call },
    startedElsewhere: facts.startedElsewhere ?? false,
  };
}

/** Renders the notices in order from an empty view: the output, and the view after the last. */
function run(notices: ChatNotice[], style = PLAIN, from: RenderView = EMPTY_VIEW): { print: Print[]; view: RenderView } {
  let view = from;
  const print: Print[] = [];
  for (const notice of notices) {
    const rendered = render(notice, view, style);
    view = rendered.view;
    print.push(...rendered.print);
  }
  return { print, view };
}

/** The output as a terminal without styles would show it: `end_line` ends an open streamed line. */
function transcript(print: Print[]): string {
  let text = '';
  for (const item of print) {
    if (item.kind === 'line') text += `${text === '' || text.endsWith('\n') ? '' : '\n'}${item.text}\n`;
    else if (item.kind === 'text') text += item.text;
    else if (item.kind === 'end_line') text += text === '' || text.endsWith('\n') ? '' : '\n';
    else text += item.typed ? '' : `${item.prompt}${item.line}\n`;
  }
  return text;
}

describe('the chat renderer', () => {
  it('streams the answer, marks reasoning without styles, and ends the streamed line before any other line', () => {
    const { print, view } = run([
      update({ type: 'reasoning_delta', text: 'Thinking ' }),
      update({ type: 'reasoning_delta', text: 'hard.' }),
      update({ type: 'text_delta', text: 'Running ' }),
      update({ type: 'text_delta', text: 'it.' }),
    ]);
    expect(print).toEqual([
      { kind: 'text', text: '(reasoning) ' },
      { kind: 'text', text: 'Thinking ' },
      { kind: 'text', text: 'hard.' },
      { kind: 'end_line' },
      { kind: 'text', text: 'Running ' },
      { kind: 'text', text: 'it.' },
    ]);
    expect(view.streaming).toBe('text');
    const next = run([update({ type: 'turn_finished', outcome: { status: 'completed', finalText: 'it.' } })], PLAIN, view);
    expect(next.print).toEqual([{ kind: 'end_line' }, { kind: 'line', text: '✓ completed' }]);
    expect(next.view.streaming).toBeNull();
  });

  it('dims reasoning with styles instead of marking it', () => {
    const { print } = run([update({ type: 'reasoning_delta', text: 'hm' })], STYLED);
    expect(print).toEqual([{ kind: 'text', text: styleText(['dim', 'italic'], 'hm') }]);
  });

  it('shows a tool call with its arguments, and its end by the name it started with', () => {
    const { print, view } = run([
      update({ type: 'text_delta', text: 'Running it.' }),
      update({ type: 'tool_call_started', toolCallId: 'call_1', name: 'run_command', status: 'running' }, { call: '{"command":"sleep 600","timeoutMs":5000}' }),
      update({ type: 'tool_call_progress', toolCallId: 'call_1', progress: { bytes: 3 } }),
      update({ type: 'tool_call_finished', toolCallId: 'call_1', status: 'cancelled' }),
      update({ type: 'tool_call_started', toolCallId: 'call_2', name: 'list_dir', status: 'running' }),
      update({ type: 'tool_call_finished', toolCallId: 'call_2', status: 'succeeded' }),
      update({ type: 'tool_call_finished', toolCallId: 'call_unknown', status: 'failed' }),
    ]);
    expect(transcript(print)).toBe(
      ['Running it.', '▸ run_command  sleep 600, timeoutMs: 5000', '  ✗ run_command cancelled', '▸ list_dir', '  ✓ list_dir succeeded', '  ✗ tool failed', ''].join('\n'),
    );
    // Finished calls are forgotten.
    expect(view.toolNames).toEqual({});
  });

  it('shows progress reported in the MCP shape, one dim line each', () => {
    const { print } = run([
      update({ type: 'tool_call_started', toolCallId: 'call_1', name: 'files__copy', status: 'running' }),
      update({ type: 'tool_call_progress', toolCallId: 'call_1', progress: { progress: 1, total: 2, message: 'copying' } }),
      update({ type: 'tool_call_progress', toolCallId: 'call_1', progress: { progress: 2 } }),
      update({ type: 'tool_call_finished', toolCallId: 'call_1', status: 'succeeded' }),
    ]);
    expect(transcript(print)).toBe(['▸ files__copy', '  ⋯ files__copy 1/2 copying', '  ⋯ files__copy 2', '  ✓ files__copy succeeded', ''].join('\n'));
  });

  it('asks for an approval, says how it was resolved, the plan and the guardrails', () => {
    const { print } = run([
      update({ type: 'permission_requested', toolCallId: 'call_1', name: 'write_file', paths: ['a.md', 'b.md'] }),
      update({ type: 'permission_resolved', toolCallId: 'call_1', decision: 'cancelled' }),
      update({ type: 'plan_updated', plan: { explanation: 'two steps', plan: [{ step: 'one', status: 'completed' }, { step: 'two', status: 'pending' }] } }),
      update({ type: 'queue_updated', queue: [] }),
      update({ type: 'queue_updated', queue: [{ turnId: 'turn_2', clientRequestId: 'r' }] }),
      update({ type: 'guardrail_triggered', rule: 'loop', level: 'soft', toolName: 'read_file', count: 3 }),
      update({ type: 'phase_changed', phase: 'running_model' }),
      update({ type: 'phase_changed', phase: 'compacting' }),
    ]);
    expect(transcript(print)).toBe(
      [
        '? write_file needs your approval: a.md, b.md',
        '  approval withdrawn: the turn was cancelled',
        'Plan — two steps',
        '  ✓ one',
        '  ○ two',
        '1 turn(s) queued',
        "  ! guardrail: 'read_file' called 3 times in a row with the same arguments — a hint was given",
        'compacting the conversation…',
        '',
      ].join('\n'),
    );
  });

  it('announces only a turn started from elsewhere', () => {
    expect(run([update({ type: 'turn_started', clientRequestId: 'chat-x-1' })]).print).toEqual([]);
    expect(run([update({ type: 'turn_started', clientRequestId: 'other' }, { startedElsewhere: true })]).print).toEqual([
      { kind: 'line', text: 'a turn started from elsewhere (turn_1)' },
    ]);
  });

  it('echoes a line taken at the prompt it answers; a typed one was echoed by the terminal', () => {
    expect(run([{ kind: 'line_taken', line: 'hello', atApproval: false, typed: false }]).print).toEqual([{ kind: 'echo', prompt: INPUT_PROMPT, line: 'hello', typed: false }]);
    expect(run([{ kind: 'line_taken', line: 'a', atApproval: true, typed: true }]).print).toEqual([{ kind: 'echo', prompt: APPROVAL_PROMPT, line: 'a', typed: true }]);
  });

  it('says what the chart tells, one line each, ending a streamed line first', () => {
    const streaming: RenderView = { streaming: 'text', toolNames: { call_1: 'run_command' } };
    const cases: [ChatNotice, string][] = [
      [{ kind: 'error', error: { code: 'Busy', message: 'another turn\nof this session' } }, 'error [Busy] another turn ⏎ of this session'],
      [{ kind: 'feed_ended', error: { code: 'SessionClosed', message: 'closed' } }, 'error [SessionClosed] closed — no more live updates from this session'],
      [{ kind: 'caught_up' }, 'some updates were missed while disconnected; caught up from the session snapshot'],
      [{ kind: 'turn_running', turnId: 'turn_2', phase: 'running_tools' }, 'a turn is running (turn_2, running_tools)'],
      [{ kind: 'approval_needed', name: 'write_file', paths: [] }, '? write_file needs your approval'],
      [{ kind: 'outcome', outcome: { status: 'failed', code: 'model_error', message: 'boom' } }, '✗ failed [model_error] boom'],
      [{ kind: 'cancelling' }, 'cancelling…'],
      [{ kind: 'exit_hint' }, '(Ctrl+C again or Ctrl+D to exit)'],
      [{ kind: 'turn_queued', turnId: 'turn_3' }, 'queued behind the running turn (turn_3)'],
      [{ kind: 'sent_while_running' }, "(a turn is running; the host decides by the session's busy policy)"],
      [{ kind: 'no_session' }, 'no session: /new starts one, /open ID continues one'],
      [{ kind: 'bad_answer' }, 'answer a (allow once) or d (deny)'],
      [{ kind: 'usage', usage: '/open SESSION_ID' }, 'usage: /open SESSION_ID'],
      [{ kind: 'unknown_command', name: 'what' }, 'unknown command /what (/help lists them)'],
      [{ kind: 'busy' }, 'a turn is running: Ctrl+C cancels it first'],
      [{ kind: 'mode', mode: null }, 'mode: unknown'],
      [{ kind: 'compacting' }, 'compacting…'],
      [{ kind: 'command_done', result: { kind: 'mode_set', mode: 'auto' }, sessionId: 'ses_1' }, 'mode: auto (from the next tool call on)'],
      [{ kind: 'command_done', result: { kind: 'compacted', compactionId: 'cmp_1' }, sessionId: 'ses_1' }, 'compacted (checkpoint cmp_1)'],
      [{ kind: 'input_ended_at_approval' }, 'the input ended with an approval pending'],
      [{ kind: 'leaving_turn', turnId: 'turn_1', backend: 'host' }, 'the running turn turn_1 goes on on the host'],
      [{ kind: 'leaving_turn', turnId: 'turn_1', backend: 'embedded' }, 'the running turn turn_1 ends with this process (actor_stopped)'],
    ];
    for (const [notice, said] of cases) {
      const rendered = render(notice, streaming, PLAIN);
      expect(rendered.print, notice.kind).toEqual([{ kind: 'end_line' }, { kind: 'line', text: said }]);
      expect(rendered.view).toEqual({ streaming: null, toolNames: { call_1: 'run_command' } });
      // Nothing streams: just the line, the same view.
      const quiet = { streaming: null, toolNames: {} };
      expect(render(notice, quiet, PLAIN)).toEqual({ view: quiet, print: [{ kind: 'line', text: said }] });
    }
  });

  it('lists sessions, draws the context, prints the help; a new session starts from an empty view', () => {
    const sessions = run([
      {
        kind: 'command_done',
        result: { kind: 'sessions_listed', sessions: [{ sessionId: 'ses_1', agent: 'default', permissionMode: 'ask', createdAtMs: 0, status: 'idle', lastOutcome: 'completed' }] },
        sessionId: 'ses_1',
      },
    ]).print;
    expect(sessions).toEqual([{ kind: 'line', text: '* ses_1  1970-01-01 00:00  default, ask, idle, last completed' }]);
    const context = run([
      { kind: 'command_done', result: { kind: 'context_read', usage: { system: 100, conversation: 200, tools: 300, reservedOutput: 400, autoCompactLine: 1_000, window: 2_000, percentUsed: 50 } }, sessionId: 'ses_1' },
    ]).print;
    expect(context).toHaveLength(3);
    expect(context[0]).toMatchObject({ kind: 'line', text: expect.stringMatching(/^context [█▓▒░·│]{50} 50% of the auto-compact line$/) });
    expect(run([{ kind: 'help' }]).print.length).toBeGreaterThan(5);
    const opened = render({ kind: 'session_opened', sessionId: 'ses_2', created: false, mode: 'auto' }, { streaming: 'reasoning', toolNames: { call_1: 'x' } }, PLAIN);
    expect(opened).toEqual({ view: EMPTY_VIEW, print: [{ kind: 'end_line' }, { kind: 'line', text: 'session ses_2 (continued, mode auto)' }] });
  });
});

describe('agents in the chat', () => {
  it('/agents lists each agent with its model, description and tools; a new session says its agent', () => {
    const listed = render(
      {
        kind: 'command_done',
        result: { kind: 'agents_listed', agents: [{ name: 'reviewer', description: 'Reviews;\nnever writes.', model: 'the demo model', tools: ['read_file', 'grep'] }] },
        sessionId: 'ses_1',
      },
      EMPTY_VIEW,
      PLAIN,
    ).print;
    expect(listed).toEqual([
      { kind: 'line', text: 'reviewer  the demo model  Reviews; ⏎ never writes.' },
      { kind: 'line', text: '  tools: read_file, grep' },
    ]);
    const opened = render({ kind: 'session_opened', sessionId: 'ses_3', created: true, mode: 'ask', agent: 'reviewer' }, EMPTY_VIEW, PLAIN).print;
    expect(opened).toEqual([{ kind: 'line', text: 'session ses_3 (new, mode ask, agent reviewer)' }]);
  });
});
