import { describe, expect, it } from 'vitest';
import type { StreamItem } from '../../src/inspect/stream-protocol.js';
import type { SessionUpdate } from '../../src/protocol/updates.js';
import { SessionModel } from '../../visualizer/src/session-model.js';

/** The inspector page's model of one session, fed as its stream feeds it. */
function model(): SessionModel {
  const m = new SessionModel('ses_1');
  m.hello({
    sessionId: 'ses_1',
    cursor: 0,
    reset: true,
    actors: [],
    history: [],
    principal: null,
    session: { sessionId: 'ses_1', lastUpdateSequence: 0, permissionMode: 'ask', busyPolicy: 'reject', queue: [], runtime: { kind: 'idle' } },
  });
  return m;
}

let cursor = 0;
const update = (sequence: number, u: SessionUpdate): StreamItem => ({ kind: 'update', cursor: ++cursor, at: 0, envelope: { turnId: 'turn_1', sequence, occurredAtMs: 0, update: u } });

describe('the inspector page\'s session model and turn_resumed (issue 26)', () => {
  it('shows the turn running again from its start, and the numbers skipped before it as no gap; a real gap still shows', () => {
    const m = model();
    m.add(update(1, { type: 'turn_started', clientRequestId: 'r1' }));
    m.add(update(2, { type: 'phase_changed', phase: 'running_model' }));
    m.add(update(3, { type: 'tool_call_started', toolCallId: 'c1', name: 'run_command', status: 'running' }));
    // The host died; its successor numbers above the block it had reserved.
    const resumed = update(10_001, { type: 'turn_resumed', clientRequestId: 'r1', fromSequence: 10_001, reason: 'host_restarted' });
    m.add(resumed);
    expect(m.session!.runtime).toMatchObject({ kind: 'running', turnId: 'turn_1', clientRequestId: 'r1', phase: 'starting', toolCalls: [], draftText: '' });
    expect(m.gaps.size).toBe(0);
    m.add(update(10_002, { type: 'phase_changed', phase: 'running_model' }));
    expect(m.session!.runtime).toMatchObject({ kind: 'running', phase: 'running_model' });
    const skipped = update(10_005, { type: 'phase_changed', phase: 'running_tools' });
    m.add(skipped);
    expect([...m.gaps]).toEqual([[skipped.cursor, 2]]);
  });
});
