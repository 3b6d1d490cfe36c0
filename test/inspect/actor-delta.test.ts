import type { AnyActorRef, InspectionEvent } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { applyActorChange, applyActorMessage } from '../../src/inspect/actor-delta.js';
import { actorInfo, actorState } from '../../src/inspect/actor-state.js';
import { InspectHub } from '../../src/inspect/inspect-hub.js';
import { sanitize } from '../../src/inspect/sanitize.js';
import { SentActor } from '../../src/inspect/sent-actor.js';
import type { Sent } from '../../src/inspect/session-watch.js';
import { ActorMessageSchema, VersionedActorStateSchema } from '../../src/inspect/stream-schema.js';
import type { ActorInfo, ActorState, StreamItem, VersionedActorState } from '../../src/inspect/stream-protocol.js';
import { SessionModel } from '../../visualizer/src/session-model.js';
import { harness, readFileTool, type Harness } from '../support/harness.js';
import { until } from '../support/poll.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

type ActorMessage = Extract<StreamItem, { kind: 'snapshot' | 'delta' }>;
const isActorMessage = (item: StreamItem): item is ActorMessage => item.kind === 'snapshot' || item.kind === 'delta';

/** As JSON carries it: a key whose value is undefined is no key. */
const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Folds actor messages as a client does, from `from`; every message's state in order. */
function fold(items: StreamItem[], from: VersionedActorState[] = []): { held: Map<string, VersionedActorState>; states: { item: ActorMessage; state: ActorState }[] } {
  const held = new Map(from.map((v) => [v.state.actor.actorId, v]));
  const states: { item: ActorMessage; state: ActorState }[] = [];
  for (const item of items.filter(isActorMessage)) {
    const applied = applyActorMessage(held.get(item.actorId), item);
    if (!applied.ok) throw new Error(`no base for ${item.actorId} v${item.version} (held v${applied.held})`);
    held.set(item.actorId, applied.state);
    states.push({ item, state: applied.state.state });
  }
  return { held, states };
}

function collector() {
  const items: StreamItem[] = [];
  return { items, listener: { item: (s: Sent) => items.push(JSON.parse(s.json) as StreamItem), end: () => undefined } };
}

/** A turn of tool steps and text, so the turn and each tool call move through their charts with their contexts. */
const toolTurn = (steps: number, deltas = 3) => [
  ...Array.from({ length: steps }, (_, i) => ({ deltas: Array.from({ length: deltas }, (_, d) => `s${i}d${d} `), toolCalls: [{ name: 'read_file', args: { path: `f${i}.txt`, apiKey: 'sk-never-shown' } }] })),
  { text: 'done' },
];

describe('the inspector stream\'s actor deltas', () => {
  it('rebuilds, from the first whole snapshot and the deltas after it, every state the actors went through', async () => {
    h = await harness(toolTurn(4), { tools: [readFileTool()], permissionMode: 'auto' });
    const page = collector();
    new InspectHub().watch(h.session).listen(page.listener, null);
    // The state of every machine actor after each of its steps, sanitized whole, as a snapshot message without deltas would say it.
    const expected = new Map<string, ActorState[]>();
    const probe = h.session.actor.system.inspect((event: InspectionEvent) => {
      if (event.type !== '@xstate.snapshot') return;
      const info = actorInfo(event.actorRef as AnyActorRef);
      if (info.machineId === null) return;
      expected.set(info.actorId, [...(expected.get(info.actorId) ?? []), wire(actorState(info, event.snapshot))]);
    });
    const turn = await h.session.startTurn({ clientRequestId: 'r1', input: [{ type: 'text', text: 'read' }] });
    if (!turn.ok) throw new Error('refused');
    expect(await h.session.waitForTurn(turn.turnId)).toMatchObject({ status: 'completed' });
    await until('the last step is sent', () => page.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'turn_finished'));
    probe.unsubscribe();

    const messages = page.items.filter(isActorMessage);
    for (const message of messages) expect(ActorMessageSchema.safeParse(message).success, JSON.stringify(message)).toBe(true);
    const { states } = fold(page.items);
    const seen = new Map<string, number>();
    for (const { item, state } of states) {
      const n = seen.get(item.actorId) ?? 0;
      seen.set(item.actorId, n + 1);
      expect(item.version).toBe(n + 1);
      expect(wire(state), `${item.actorId} v${item.version} after ${item.eventType}`).toEqual(expected.get(item.actorId)![n]);
    }
    expect([...seen]).toEqual([...expected].map(([id, list]) => [id, list.length]));
    // Each actor's first message is whole, every later one a delta; the turn and the tool calls change their contexts key by key.
    expect(new Set(messages.filter((m) => m.kind === 'snapshot').map((m) => m.actorId)).size).toBe(messages.filter((m) => m.kind === 'snapshot').length);
    const deltas = messages.filter((m) => m.kind === 'delta');
    expect(deltas.some((m) => m.change.set !== undefined)).toBe(true);
    expect(deltas.every((m) => m.change.context === undefined)).toBe(true);
    // A delta is a fraction of the whole state it stands for.
    const deltaBytes = deltas.reduce((n, m) => n + JSON.stringify(m.change).length, 0);
    const wholeBytes = states.filter((s) => s.item.kind === 'delta').reduce((n, s) => n + JSON.stringify(s.state).length, 0);
    expect(deltaBytes).toBeLessThan(wholeBytes / 4);
    expect(JSON.stringify(page.items)).not.toContain('sk-never-shown');
  });

  it('gives a page that joins late, or starts over after a gap, the whole picture: the hello\'s actors, and bases where the buffer\'s deltas start', async () => {
    // Past the watch's 2 000-message buffer: the turn's first (whole) message is dropped from it.
    h = await harness([...toolTurn(3, 800), { text: 'done' }], { tools: [readFileTool()], permissionMode: 'auto' });
    const hub = new InspectHub();
    const watch = hub.watch(h.session);
    const first = collector();
    watch.listen(first.listener, null);
    const turn = await h.session.startTurn({ clientRequestId: 'r1', input: [{ type: 'text', text: 'read' }] });
    if (!turn.ok) throw new Error('refused');
    await h.session.waitForTurn(turn.turnId);
    await until('the last step is sent', () => first.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'turn_finished'));
    expect(first.items.length).toBeGreaterThan(2_000);
    const truth = fold(first.items).held;

    // A client that missed one delta cannot apply the next: it holds another version.
    const turnActor = first.items.find((i) => i.kind === 'snapshot' && i.state.actor.machineId === 'turn')!;
    const deltas = first.items.filter((i): i is Extract<StreamItem, { kind: 'delta' }> => i.kind === 'delta' && isActorMessage(turnActor) && i.actorId === turnActor.actorId);
    const held = fold(first.items.slice(0, first.items.indexOf(deltas[1]!))).held;
    expect(applyActorMessage(held.get(deltas[2]!.actorId), deltas[2]!)).toEqual({ ok: false, held: deltas[1]!.version - 1 });

    // So it starts over (no resume point), as one whose resume point left the buffer does.
    for (const after of [null, first.items[0]!.cursor - 1]) {
      const late = collector();
      const { hello, replay } = watch.listen(late.listener, after);
      expect(hello.reset).toBe(true);
      expect(replay.length).toBe(2_000);
      const replayed = replay.map((s) => JSON.parse(s.json) as StreamItem);
      // The turn's oldest buffered message is a delta: the hello carries what it applies to.
      expect(hello.history.map((v) => v.state.actor.machineId)).toContain('turn');
      for (const base of hello.history) {
        expect(VersionedActorStateSchema.safeParse(base).success).toBe(true);
        const oldest = replayed.filter(isActorMessage).find((m) => m.actorId === base.state.actor.actorId)!;
        expect(oldest).toMatchObject({ kind: 'delta', version: base.version + 1 });
      }
      const { held: rebuilt } = fold(replayed, hello.history);
      for (const [id, state] of rebuilt) expect(wire(state)).toEqual(wire(truth.get(id)));
      // The hello's present is where the buffer's deltas lead, version for version, and what XState holds.
      for (const present of hello.actors) {
        if (present.version === 0) continue;
        expect(wire(present)).toEqual(wire(rebuilt.get(present.state.actor.actorId)));
      }
      expect(hello.actors.find((a) => a.state.actor.machineId === 'session')!.version).toBe(truth.get(hello.actors[0]!.state.actor.actorId)!.version);
      watch.unlisten(late.listener);
    }
  });

  it('the page\'s model starts the stream again on a gap, and is whole after the new hello', async () => {
    h = await harness(toolTurn(2), { tools: [readFileTool()], permissionMode: 'auto' });
    const watch = new InspectHub().watch(h.session);
    const first = collector();
    const opened = watch.listen(first.listener, null);
    const turn = await h.session.startTurn({ clientRequestId: 'r1', input: [{ type: 'text', text: 'read' }] });
    if (!turn.ok) throw new Error('refused');
    await h.session.waitForTurn(turn.turnId);
    await until('the last step is sent', () => first.items.some((i) => i.kind === 'update' && i.envelope.update.type === 'turn_finished'));

    let gaps = 0;
    const model = new SessionModel(h.session.id, () => (gaps += 1));
    model.hello(wire(opened.hello));
    const dropped = first.items.findIndex((i) => i.kind === 'delta' && i.eventType !== 'xstate.stop');
    for (const [n, item] of first.items.entries()) if (n !== dropped) model.add(item);
    expect(gaps).toBe(1);

    const again = watch.listen(collector().listener, null);
    model.hello(wire(again.hello));
    for (const s of again.replay) model.add(JSON.parse(s.json) as StreamItem);
    expect(gaps).toBe(1);
    const truth = fold(first.items).held;
    for (const [id, view] of model.actors) {
      const known = truth.get(id);
      if (known) expect(wire(view.state)).toEqual(wire(known.state));
    }
    // Every snapshot entry of the timeline holds a whole state; a delta's keeps what it changed.
    const entries = model.items.filter((i) => i.kind === 'snapshot');
    expect(entries.length).toBe(first.items.filter(isActorMessage).length);
    expect(entries.some((e) => e.change !== undefined)).toBe(true);
    const last = model.statesAt(model.items.length - 1);
    expect(wire(last.find((s) => s.actor.machineId === 'turn'))).toEqual(wire([...truth.values()].find((v) => v.state.actor.machineId === 'turn')!.state));
  });
});

describe('SentActor (an actor\'s next message)', () => {
  const info: ActorInfo = { actorId: 'x:1', parentId: null, name: 'm', machineId: 'm' };
  const snap = (context: unknown, value: string = 'a', status = 'active') => ({ status, value, context, children: {}, _nodes: [value] });
  const whole = (snapshot: ReturnType<typeof snap>) => wire(actorState(info, snapshot));

  it('says, for each kind of context change, exactly what turns the last state into the new one', () => {
    const big = 'x'.repeat(1_900);
    const shared = { deep: { list: [1, 2, 3] } };
    const cyclic: Record<string, unknown> = { name: 'c' };
    cyclic.self = cyclic;
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const contexts: unknown[] = [
      { a: 1, b: 'two', shared },
      { a: 2, b: 'two', shared },
      { a: 2, b: 'two', shared, added: { apiKey: 'sk-secret', tokens: 12, note: 'password=hunter2' } },
      { a: 2, shared, added: undefined },
      { a: 2, shared, added: 'back' },
      cyclic,
      { ...cyclic, name: 'd' },
      [1, 2, 3],
      null,
      { a: 3 },
      // Over the 32 KiB budget: one key's size changes what the others keep, so the context goes whole.
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, big])),
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i === 3 ? 'short' : big])),
      { a: 4 },
      new Map([['a', 1]]),
      parsed,
      { a: 5, when: new Date(0) },
      { a: 5, when: new Date(0), many: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`m${i}`, i])) },
    ];
    const sent = new SentActor(info);
    let state: ActorState | null = null;
    for (const [n, context] of contexts.entries()) {
      const snapshot = snap(context, n % 3 === 0 ? 'a' : 'b', n === contexts.length - 1 ? 'done' : 'active');
      const message = sent.next(snapshot);
      expect(message.version).toBe(n + 1);
      if (message.change === null) state = message.state;
      else state = applyActorChange(wire(state!), wire(message.change));
      expect(wire(state), `step ${n}: ${JSON.stringify(message.change)}`).toEqual(whole(snapshot));
      expect(JSON.stringify(state)).not.toContain('sk-secret');
      expect(JSON.stringify(state)).not.toContain('hunter2');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('sends only what changed, and nothing of a context that kept its identity', () => {
    const sent = new SentActor(info);
    const context = { a: 1, long: 'y'.repeat(500) };
    sent.next(snap(context));
    expect(sent.next(snap(context, 'b'))).toMatchObject({ state: null, change: { states: ['m', 'm.b'] } });
    const next = { ...context, a: 2 };
    const message = sent.next(snap(next, 'b'));
    expect(message.change).toEqual({ set: { a: 2 } });
    expect(sanitize(next)).toEqual({ a: 2, long: 'y'.repeat(500) });
  });

  it('a client applying a crafted change keeps `__proto__` a key, not a prototype', () => {
    const base: ActorState = { actor: info, status: 'active', states: [], children: {}, context: { a: 1 } };
    const next = applyActorChange(base, JSON.parse('{"set": {"__proto__": {"polluted": true}}}') as never);
    expect(Object.getPrototypeOf(next.context)).toBe(Object.prototype);
    expect(Object.hasOwn(next.context as object, '__proto__')).toBe(true);
  });
});
