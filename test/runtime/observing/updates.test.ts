import { firstValueFrom, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { REPLAY_CAPACITY, type UpdateEnvelope } from '../../../src/index.js';
import { harness, runTurn, withoutWorldStateMessages, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

describe('sequenced updates, replay and snapshot (RT-19…RT-21)', () => {
  it('numbers updates per session from 1 without gaps, in version 7 envelopes', async () => {
    h = await harness([{ text: 'a b c', toolCalls: [{ name: 'read_file', args: { path: 'x' } }] }, { text: 'done' }]);
    const { turnId } = await runTurn(h.session, 'go');
    await runTurn(h.session, 'again');
    expect(h.updates.map((u) => u.sequence)).toEqual(h.updates.map((_, i) => i + 1));
    for (const u of h.updates) {
      expect(u.version).toBe(7);
      expect(u.sessionId).toBe(h.session.id);
      expect(typeof u.occurredAtMs).toBe('number');
    }
    expect(h.updates[0]).toMatchObject({ turnId, update: { type: 'turn_started' } });
    const finished = h.updates.filter((u) => u.update.type === 'turn_finished');
    expect(finished).toHaveLength(2);
    expect(finished[0]!.update).toEqual({ type: 'turn_finished', outcome: { status: 'completed', finalText: 'done' } });
    expect(h.session.snapshot().lastUpdateSequence).toBe(h.updates.length);
  });

  it('gives each session its own sequence and carries all of them on runtime.updates$', async () => {
    h = await harness([{ text: 'one' }, { text: 'two' }]);
    const all: UpdateEnvelope[] = [];
    h.runtime.updates$.subscribe((u) => all.push(u));
    const other = await h.runtime.createSession();
    const mine: UpdateEnvelope[] = [];
    other.updates$.subscribe((u) => mine.push(u));
    await runTurn(h.session, 'a');
    await runTurn(other, 'b');
    expect(mine[0]!.sequence).toBe(1);
    expect(new Set(all.map((u) => u.sessionId))).toEqual(new Set([h.session.id, other.id]));
    expect(all.filter((u) => u.sessionId === other.id)).toEqual(mine);
  });

  it('replays from the ring of the last 512 updates and asks for a snapshot beyond it', async () => {
    const deltas = Array.from({ length: 600 }, (_, i) => `w${i} `);
    h = await harness([{ deltas }]);
    await runTurn(h.session, 'go');
    const last = h.updates.length;
    expect(last).toBeGreaterThan(REPLAY_CAPACITY + 50);

    const tail = h.session.replayUpdates(last - 10);
    expect(tail).toEqual({ ok: true, updates: h.updates.slice(-10) });
    const whole = h.session.replayUpdates(last - REPLAY_CAPACITY);
    expect(whole.ok && whole.updates.map((u) => u.sequence)).toEqual(h.updates.slice(-REPLAY_CAPACITY).map((u) => u.sequence));
    expect(h.session.replayUpdates(last - REPLAY_CAPACITY - 1)).toEqual({ ok: false, error: { code: 'SnapshotRequired' } });
    expect(h.session.replayUpdates(0)).toEqual({ ok: false, error: { code: 'SnapshotRequired' } });
    expect(h.session.replayUpdates(last)).toEqual({ ok: true, updates: [] });
  });

  it('replays everything to a late subscriber while the ring still holds it', async () => {
    h = await harness([{ text: 'short' }]);
    await runTurn(h.session, 'go');
    expect(h.session.replayUpdates(0)).toEqual({ ok: true, updates: h.updates });
  });

  it('shows the running turn in the snapshot — phase, draft, live tool calls — and the outcome after', async () => {
    let seen: unknown;
    h = await harness([
      { text: 'thinking aloud', reasoning: 'hmm', toolCalls: [{ id: 'r1', name: 'read_file', args: { path: 'x' } }] },
      (_req) => {
        seen = h!.session.snapshot().runtime;
        return { text: 'final' };
      },
    ]);
    const mid: unknown[] = [];
    h.session.updates$.subscribe((u) => {
      if (u.update.type === 'text_delta' && u.update.text === 'aloud') mid.push(h!.session.snapshot().runtime);
    });
    await runTurn(h.session, 'go', 'req-9');
    expect(mid[0]).toMatchObject({ kind: 'running', clientRequestId: 'req-9', phase: 'running_model', draftText: 'thinking aloud', draftReasoning: 'hmm' });
    expect(seen).toMatchObject({ kind: 'running', phase: 'running_model', draftText: '', toolCalls: [{ toolCallId: 'r1', name: 'read_file', status: 'succeeded' }] });
    expect(h.session.snapshot()).toMatchObject({
      version: 8,
      sessionId: h.session.id,
      permissionMode: 'ask',
      runtime: { kind: 'terminal', outcome: { status: 'completed', finalText: 'final' } },
    });
  });

  it('streams text deltas as they arrive, never stores them, and clears the draft after the message is written', async () => {
    h = await harness([{ deltas: ['Hel', 'lo', ' world'] }]);
    const firstThree = firstValueFrom(h.session.updates$.pipe(take(3), toArray()));
    await runTurn(h.session, 'go');
    expect((await firstThree).map((u) => u.update.type)).toEqual(['turn_started', 'phase_changed', 'phase_changed']);
    const kinds = h.updates.map((u) => u.update.type);
    expect(kinds.filter((k) => k === 'text_delta')).toHaveLength(3);
    expect(kinds.indexOf('draft_cleared')).toBeGreaterThan(kinds.lastIndexOf('text_delta'));
    const stored = withoutWorldStateMessages(await h.storage.listMessages(h.session.id));
    expect(stored.map((m) => m.message)).toEqual([
      { role: 'user', kind: 'normal', text: 'go' },
      { role: 'assistant', text: 'Hello world', reasoning: '', toolCalls: [] },
    ]);
  });
});

describe('tool progress (RT-19, RT-21)', () => {
  it('streams tool_call_progress between start and finish, and keeps it out of the snapshot', async () => {
    const { defineTool } = await import('../../../src/index.js');
    const { z } = await import('zod');
    const snapshots: unknown[] = [];
    const slow = defineTool({
      name: 'slow',
      description: 'reports progress',
      effect: 'read',
      input: z.object({}),
      execute: async (_args, ctx) => {
        ctx.progress({ percent: 50 });
        ctx.progress({ percent: 100 });
        snapshots.push(h!.session.snapshot().runtime);
        return { status: 'succeeded', content: 'ok' };
      },
    });
    h = await harness([{ text: 'x', toolCalls: [{ id: 's1', name: 'slow', args: {} }] }, { text: 'done' }], { tools: [slow] });
    await runTurn(h.session, 'go');
    const around = h.updates.filter((u) => u.update.type.startsWith('tool_call')).map((u) => u.update);
    expect(around).toEqual([
      { type: 'tool_call_started', toolCallId: 's1', name: 'slow', status: 'validating' },
      { type: 'tool_call_progress', toolCallId: 's1', progress: { percent: 50 } },
      { type: 'tool_call_progress', toolCallId: 's1', progress: { percent: 100 } },
      { type: 'tool_call_finished', toolCallId: 's1', status: 'succeeded' },
    ]);
    expect(snapshots[0]).toMatchObject({ toolCalls: [{ toolCallId: 's1', name: 'slow', status: 'running' }] });
    expect(JSON.stringify(snapshots[0])).not.toContain('percent');
  });
});
