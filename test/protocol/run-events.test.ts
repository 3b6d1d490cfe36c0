import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { RUN_EVENT_TABLE, RunEventMapper } from '../../src/protocol/run-events.js';
import { UPDATE_VERSION, type SessionUpdate, type UpdateEnvelope } from '../../src/protocol/updates.js';

/** Issue 30: the one table from session updates to the seed's run events, and the README's copy of it. */

let sequence = 0;
const envelope = (update: SessionUpdate): UpdateEnvelope => ({ version: UPDATE_VERSION, sessionId: 'ses_1', turnId: 'turn_1', sequence: ++sequence, occurredAtMs: 1_000, update });

describe('run events', () => {
  it('the README lists RUN_EVENT_TABLE row by row, in order', async () => {
    const readme = await readFile('README.md', 'utf8');
    const from = readme.indexOf('### Run events');
    const section = readme.slice(from, readme.indexOf('\n### ', from + 1));
    const rows = section.split('\n').filter((line) => /^\| `[a-z_]+` \|/.test(line));
    expect(rows).toEqual(RUN_EVENT_TABLE.map((row) => `| \`${row.update}\` | ${row.when ?? 'any'} | \`${row.event}\` |`));
  });

  it('maps delegation and the in-run switch to agent events, other tools to tool events, and leaves the rest out', () => {
    const mapper = new RunEventMapper('run_1');
    const events = [
      envelope({ type: 'turn_started', clientRequestId: 'c1' }),
      envelope({ type: 'reasoning_delta', text: 'hmm' }),
      envelope({ type: 'phase_changed', phase: 'running_tools' }),
      envelope({ type: 'tool_call_started', toolCallId: 'a', name: 'spawn_agent', status: 'running' }),
      envelope({ type: 'tool_call_finished', toolCallId: 'a', status: 'succeeded' }),
      envelope({ type: 'tool_call_started', toolCallId: 'b', name: 'spawn_agent', status: 'running' }),
      envelope({ type: 'tool_call_finished', toolCallId: 'b', status: 'failed' }),
      envelope({ type: 'tool_call_started', toolCallId: 'c', name: 'wait_agent', status: 'running' }),
      envelope({ type: 'tool_call_finished', toolCallId: 'c', status: 'succeeded' }),
      envelope({ type: 'tool_call_started', toolCallId: 'd', name: 'switch_agent', status: 'running' }),
      envelope({ type: 'agent_switched', from: 'main', to: 'explorer', toolCallId: 'd' }),
      envelope({ type: 'tool_call_finished', toolCallId: 'd', status: 'succeeded' }),
      envelope({ type: 'tool_call_started', toolCallId: 'e', name: 'read_file', status: 'running' }),
      envelope({ type: 'tool_call_finished', toolCallId: 'e', status: 'denied' }),
      // A finish whose start this mapper never saw (a stream resumed after it) counts as any tool's.
      envelope({ type: 'tool_call_finished', toolCallId: 'unseen', status: 'succeeded' }),
      envelope({ type: 'permission_requested', toolCallId: 'e', name: 'read_file', paths: [] }),
      envelope({ type: 'text_delta', text: 'done' }),
      envelope({ type: 'turn_finished', outcome: { status: 'failed', code: 'model_error', message: 'boom' } }),
    ].map((e) => mapper.map(e));
    expect(events.filter((e) => e !== null).map((e) => e.event)).toEqual([
      'run.started',
      'agent.delegate.started',
      'agent.delegate.started',
      'tool.failed',
      'agent.delegate.completed',
      'agent.switch',
      'tool.started',
      'tool.failed',
      'tool.completed',
      'message.delta',
      'run.failed',
    ]);
    expect(events.find((e) => e?.event === 'agent.switch')?.data).toEqual({
      runId: 'run_1',
      sessionId: 'ses_1',
      turnId: 'turn_1',
      sequence: 11,
      occurredAtMs: 1_000,
      from: 'main',
      to: 'explorer',
      toolCallId: 'd',
    });
    expect(events.at(-1)?.data).toMatchObject({ status: 'failed', errorCode: 'model_error', message: 'boom' });
  });

  it('names each of the four ends of a run', () => {
    const mapper = new RunEventMapper('run_1');
    const ends = (['completed', 'cancelled', 'timed_out'] as const).map((status) => {
      const outcome = status === 'completed' ? { status, finalText: 'ok' } : status === 'timed_out' ? { status, message: 'too long' } : { status };
      return mapper.map(envelope({ type: 'turn_finished', outcome }))?.event;
    });
    expect(ends).toEqual(['run.completed', 'run.cancelled', 'run.timed_out']);
  });
});
