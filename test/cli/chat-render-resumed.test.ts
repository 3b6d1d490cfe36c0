import { describe, expect, it } from 'vitest';
import type { ChatNotice } from '../../machines/chat-client.effects.js';
import { plain } from '../../src/cli/chat-format.js';
import { EMPTY_VIEW, HOST_MOVED, render, type Print, type RenderStyle, type RenderView } from '../../src/cli/chat-render.js';
import { UPDATE_VERSION, type SessionUpdate } from '../../src/protocol/updates.js';

const PLAIN: RenderStyle = { paint: plain, color: false };

let sequence = 0;
function update(update: SessionUpdate): ChatNotice {
  sequence += 1;
  return { kind: 'update', envelope: { version: UPDATE_VERSION, sessionId: 'ses_1', turnId: 'turn_1', sequence, occurredAtMs: 0, update }, call: null, startedElsewhere: false };
}

function run(notices: ChatNotice[], from: RenderView = EMPTY_VIEW): { print: Print[]; view: RenderView } {
  let view = from;
  const print: Print[] = [];
  for (const notice of notices) {
    const rendered = render(notice, view, PLAIN);
    view = rendered.view;
    print.push(...rendered.print);
  }
  return { print, view };
}

const resumed = (reason: 'host_restarted' | 'owner_lost' | 'reopened' = 'host_restarted'): ChatNotice => update({ type: 'turn_resumed', clientRequestId: 'chat-1', fromSequence: 10_001, reason });

describe('the chat renderer when the host goes away mid-turn (issue 26)', () => {
  it('says "the host moved; resuming" once, ending the streamed line; the reconnect, the catch-up and the resumed turn add nothing', () => {
    const { print, view } = run([
      update({ type: 'text_delta', text: 'Partial an' }),
      { kind: 'connection_lost', error: { code: 'ConnectionLost', message: 'the event stream broke: terminated' } },
      { kind: 'connection_restored' },
      { kind: 'caught_up' },
      resumed(),
      update({ type: 'phase_changed', phase: 'running_model' }),
      update({ type: 'text_delta', text: 'The answer.' }),
      update({ type: 'draft_cleared' }),
      update({ type: 'turn_finished', outcome: { status: 'completed', finalText: 'The answer.' } }),
    ]);
    expect(print).toEqual([
      { kind: 'text', text: 'Partial an' },
      { kind: 'end_line' },
      { kind: 'line', text: HOST_MOVED },
      { kind: 'text', text: 'The answer.' },
      { kind: 'end_line' },
      { kind: 'line', text: '✓ completed' },
    ]);
    expect(view).toEqual(EMPTY_VIEW);
  });

  it('a move while no turn runs ends with the next turn: a later snapshot catch-up is said again', () => {
    const moved = run([{ kind: 'connection_lost', error: { code: 'HostUnreachable', message: 'down' } }, { kind: 'connection_restored' }]);
    expect(moved.print).toEqual([{ kind: 'line', text: HOST_MOVED }]);
    expect(moved.view.moved).toBe(true);
    const next = run([update({ type: 'turn_started', clientRequestId: 'chat-2' }), { kind: 'caught_up' }], moved.view);
    expect(next.print).toEqual([{ kind: 'line', text: 'some updates were missed while disconnected; caught up from the session snapshot' }]);
  });

  it('a resumed turn the chat saw no outage for says where it resumes from, and ends a draft that died with the old host', () => {
    const { print } = run([update({ type: 'text_delta', text: 'Half' }), resumed('reopened'), resumed('owner_lost'), resumed('host_restarted')]);
    expect(print).toEqual([
      { kind: 'text', text: 'Half' },
      { kind: 'end_line' },
      { kind: 'line', text: 'the turn resumes: the session was opened again' },
      { kind: 'line', text: 'the turn resumes: its host was lost, another took the session' },
      { kind: 'line', text: 'the turn resumes: its host restarted' },
    ]);
  });
});
