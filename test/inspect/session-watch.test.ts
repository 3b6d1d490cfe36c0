import { afterEach, describe, expect, it } from 'vitest';
import { InspectHub } from '../../src/inspect/inspect-hub.js';
import type { Sent } from '../../src/inspect/session-watch.js';
import { activeStateIds } from '../../src/inspect/actor-state.js';
import { applyActorMessage } from '../../src/inspect/actor-delta.js';
import type { ActorState, StreamHello, StreamItem, VersionedActorState } from '../../src/inspect/stream-protocol.js';
import { harness, nextUpdate, startTurn, writeFileTool, type Harness } from '../support/harness.js';
import { until } from '../support/poll.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

function collector() {
  const items: StreamItem[] = [];
  let ended = false;
  return {
    items,
    get ended() {
      return ended;
    },
    listener: { item: (s: Sent) => items.push(JSON.parse(s.json) as StreamItem), end: () => (ended = true) },
  };
}

/** Each actor message's state, rebuilt from the deltas as the page does: cursor → state. */
function rebuilt(items: StreamItem[], from: VersionedActorState[] = []): Map<number, ActorState> {
  const held = new Map(from.map((v) => [v.state.actor.actorId, v]));
  const out = new Map<number, ActorState>();
  for (const item of items) {
    if (item.kind !== 'snapshot' && item.kind !== 'delta') continue;
    const applied = applyActorMessage(held.get(item.actorId), item);
    if (!applied.ok) throw new Error(`no base for ${item.actorId} v${item.version}`);
    held.set(item.actorId, applied.state);
    out.set(item.cursor, applied.state.state);
  }
  return out;
}

/** The active state ids of the session actor and every chart actor under it, as XState holds them now. */
function liveStates(h: Harness): Set<string> {
  const ids = new Set<string>();
  const walk = (snapshot: { value?: unknown; machine?: { id: string }; children?: Record<string, { getSnapshot(): unknown } | undefined> }): void => {
    if (snapshot.machine && snapshot.value !== undefined) for (const id of activeStateIds(snapshot.machine.id, snapshot.value as string)) ids.add(id);
    for (const child of Object.values(snapshot.children ?? {})) if (child) walk(child.getSnapshot() as typeof snapshot);
  };
  walk(h.session.actor.getSnapshot() as never);
  return ids;
}

const approvalTurn = [
  { text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'a.txt', text: 'hi', apiKey: 'sk-do-not-leak' } }] },
  { text: 'done' },
];

describe('session watch (the inspector data side)', () => {
  it('merges every actor’s inspection events with the update envelopes, in order, sanitized', async () => {
    h = await harness(approvalTurn, { tools: [writeFileTool()] });
    const hub = new InspectHub();
    const page = collector();
    const { hello } = hub.watch(h.session).listen(page.listener, null);
    expect(hello.reset).toBe(true);
    expect(hello.actors.map((a) => a.state.actor.machineId)).toEqual(['session', null]);
    expect(hello.actors[0]!.state.states).toEqual(['session', 'session.idle']);
    const turnId = await startTurn(h.session, 'write it');
    await nextUpdate(h.session, 'permission_requested');
    await until('the batch is flushed', () => page.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'permission_requested'));
    const cursors = page.items.map((i) => i.cursor);
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
    const machines = new Set(page.items.flatMap((i) => (i.kind === 'actor' ? [i.actor.machineId] : [])));
    // Every turn invokes its no-progress watchdog (GR-3), which rests in `off` without a `stallTimeoutMs`.
    expect(machines).toEqual(new Set(['turn', 'toolCall', 'stallWatchdog']));
    // The newest snapshot of each chart actor is what XState holds now.
    const states = rebuilt(page.items);
    const latest = new Map<string, string[]>();
    for (const i of page.items) if (i.kind === 'snapshot' || i.kind === 'delta') latest.set(i.actorId, states.get(i.cursor)!.states);
    expect(new Set([...latest.values()].flat())).toEqual(liveStates(h));
    expect(liveStates(h).has('turn.running_tools.tool_call.waiting_permission')).toBe(true);
    // Transitions taken are attached to the snapshot they led to.
    const toWaiting = page.items.find((i) => (i.kind === 'snapshot' || i.kind === 'delta') && states.get(i.cursor)!.states.includes('turn.running_tools.tool_call.waiting_permission'));
    expect((toWaiting?.kind === 'snapshot' || toWaiting?.kind === 'delta') && toWaiting.transitions.some((t) => t.targets.includes('turn.running_tools.tool_call.waiting_permission'))).toBe(true);
    // Machine events and updates interleave: the turn's phase update comes after the event that caused it.
    const kinds = new Set(page.items.map((i) => i.kind));
    expect(kinds).toEqual(new Set(['actor', 'snapshot', 'delta', 'event', 'update']));
    const json = JSON.stringify(page.items);
    expect(json).not.toContain('sk-do-not-leak');
    expect(json).toContain('[redacted]');
    const allowed = await h.session.resolvePermission({ turnId, toolCallId: h.session.snapshot().runtime.kind === 'running' ? (h.session.snapshot().runtime as { pendingApproval: { toolCallId: string } }).pendingApproval.toolCallId : '', decision: 'allow_once' });
    expect(allowed.ok).toBe(true);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'completed' });
    await until('turn_finished reaches the page', () => page.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'turn_finished'));
  });

  it('replays to a late page: the present actors, the buffer, and only what it missed when it resumes', async () => {
    h = await harness(approvalTurn, { tools: [writeFileTool()] });
    const hub = new InspectHub();
    const first = collector();
    const watch = hub.watch(h.session);
    watch.listen(first.listener, null);
    await startTurn(h.session, 'write it');
    await nextUpdate(h.session, 'permission_requested');
    await until('flushed', () => first.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'permission_requested'));
    const late = collector();
    const { hello, replay } = watch.listen(late.listener, null);
    expect(new Set(hello.actors.flatMap((a) => a.state.states))).toEqual(liveStates(h));
    expect(hello.actors.map((a) => a.state.actor.machineId)).toEqual(expect.arrayContaining(['session', 'turn', 'toolCall']));
    expect(replay.map((s) => s.cursor)).toEqual(first.items.map((i) => i.cursor));
    expect(hello.cursor).toBe(first.items.at(-1)!.cursor);
    const middle = first.items[Math.floor(first.items.length / 2)]!.cursor;
    const resumed: { hello: StreamHello; replay: Sent[] } = watch.listen(collector().listener, middle);
    expect(resumed.hello.reset).toBe(false);
    expect(resumed.replay.map((s) => s.cursor)).toEqual(first.items.filter((i) => i.cursor > middle).map((i) => i.cursor));
    expect(watch.listen(collector().listener, 10_000_000).hello.reset).toBe(true);
  });

  it('turns inspection off when the last page leaves: the session’s steps then reach no watcher', async () => {
    h = await harness([{ text: 'one' }, { text: 'two' }]);
    const hub = new InspectHub();
    const page = collector();
    const watch = hub.watch(h.session);
    watch.listen(page.listener, null);
    await h.session.waitForTurn(await startTurn(h.session, 'first'));
    await until('flushed', () => page.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'turn_finished'));
    watch.unlisten(page.listener);
    expect(hub.watchedCount).toBe(0);
    const seen = page.items.length;
    let observed = 0;
    // An observer of our own shows the system still inspects when asked; the watcher is no longer among them.
    const probe = h.session.actor.system.inspect(() => (observed += 1));
    await h.session.waitForTurn(await startTurn(h.session, 'second'));
    probe.unsubscribe();
    expect(observed).toBeGreaterThan(0);
    expect(page.items).toHaveLength(seen);
    // A new page gets a fresh watch whose cursors continue above the old ones.
    const again = collector();
    const next = hub.watch(h.session);
    expect(next).not.toBe(watch);
    const { replay } = next.listen(again.listener, null);
    expect(replay.length).toBeGreaterThan(0);
    expect(JSON.parse(replay[0]!.json)).toMatchObject({ kind: 'update' });
    expect(replay[0]!.cursor).toBeGreaterThan(page.items.at(-1)!.cursor);
  });

  it('ends the stream when the session closes', async () => {
    h = await harness([{ text: 'one' }]);
    const page = collector();
    new InspectHub().watch(h.session).listen(page.listener, null);
    await h.session.close();
    expect(page.ended).toBe(true);
  });
});
