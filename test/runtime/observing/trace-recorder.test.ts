import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteStorage, type SessionStorage } from '../../../src/index.js';
import { TraceRecorder } from '../../../src/runtime/trace-recorder.js';
import type { SpanWrite } from '../../../storage/session-storage.js';
import { runningSpan, T0 } from '../../support/spans.js';

/** Longer than any test runs: a batch that is written was written because of the queue or a flush, not the window. */
const NEVER_MS = 600_000;

const span = (id: string) => runningSpan(id, 's1', 't1');
const succeeded = { status: 'succeeded' as const, errorCode: null, endedAtMs: T0 + 1 };

/** A real SQLite storage whose span writes are recorded and, while the gate is shut, held back. */
function recordedStorage(inner: SessionStorage) {
  const batches: SpanWrite[][] = [];
  let open: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  const storage = new Proxy(inner, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      if (name !== 'writeSpans') return value.bind(target);
      return async (writes: SpanWrite[]) => {
        batches.push(writes.map((w) => structuredClone(w)));
        await gate;
        return inner.writeSpans(writes);
      };
    },
  });
  return {
    storage,
    batches,
    shut: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    open: () => open(),
  };
}

describe('TraceRecorder batching (RT-26)', () => {
  let inner: SessionStorage;
  beforeEach(async () => {
    inner = sqliteStorage({ filename: ':memory:' });
    await inner.migrate();
    await inner.createSession({ id: 's1', agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0 });
    await inner.beginTurn({ id: 't1', sessionId: 's1', clientRequestId: 'c1', startedAtMs: T0 }, []);
  });
  afterEach(async () => {
    await inner.close();
  });

  it('gathers the signals of a window into one batch, and flush() writes it without waiting the window out', async () => {
    const recorded = recordedStorage(inner);
    const recorder = new TraceRecorder(recorded.storage, 1_024, NEVER_MS);
    recorder.start(span('a'));
    recorder.start(span('b'));
    recorder.end('a', succeeded);
    await nextMacrotask();
    expect(recorded.batches).toEqual([]);
    await recorder.flush();
    // One call; the span started and ended within it is one finished row.
    expect(recorded.batches).toEqual([[{ type: 'start', span: { ...span('a'), ...succeeded } }, { type: 'start', span: span('b') }]]);
    expect((await inner.listSpans('s1')).map((s) => [s.id, s.status])).toEqual([
      ['a', 'succeeded'],
      ['b', 'running'],
    ]);
    recorder.end('b', succeeded);
    await recorder.flush();
    expect(recorded.batches).toHaveLength(2);
    expect(recorder.droppedSignals).toBe(0);
    expect((await inner.listSpans('s1')).map((s) => s.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('writes at once when the queue is half full, keeps one write in flight, and drops what overflows the queue', async () => {
    const recorded = recordedStorage(inner);
    recorded.shut();
    const recorder = new TraceRecorder(recorded.storage, 4, NEVER_MS);
    recorder.start(span('a'));
    expect(recorded.batches).toHaveLength(0);
    recorder.start(span('b'));
    expect(recorded.batches.map((b) => b.length)).toEqual([2]);
    // The write hangs: the next signals wait in the queue, and the one past its capacity is dropped.
    for (const id of ['c', 'd', 'e', 'f', 'g']) recorder.start(span(id));
    await nextMacrotask();
    expect(recorded.batches.map((b) => b.length)).toEqual([2]);
    expect(recorder.droppedSignals).toBe(1);
    recorded.open();
    await recorder.flush();
    expect(recorded.batches.map((b) => b.length)).toEqual([2, 4]);
    expect((await inner.listSpans('s1')).map((s) => s.id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(recorder.droppedSignals).toBe(1);
  });

  it('grows its bound with the open sessions when told a share per session, and shrinks back to its capacity', async () => {
    const recorded = recordedStorage(inner);
    recorded.shut();
    const recorder = new TraceRecorder(recorded.storage, 4, NEVER_MS, 3);
    recorder.sessionsOpen(5);
    // Bound 15: the first write goes at 8 queued (half full) and hangs; 15 more fit behind it.
    const ids = Array.from({ length: 24 }, (_, i) => `g${i}`);
    for (const id of ids) recorder.start(span(id));
    expect(recorded.batches.map((b) => b.length)).toEqual([8]);
    expect(recorder.droppedSignals).toBe(1);
    recorded.open();
    await recorder.flush();
    expect((await inner.listSpans('s1')).length).toBe(23);
    // Back to one session: the capacity (4) bounds it again, as 3 × 1 is less.
    recorder.sessionsOpen(1);
    recorded.shut();
    for (const id of ['h0', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6']) recorder.start(span(id));
    expect(recorder.droppedSignals).toBe(2);
    recorded.open();
    await recorder.flush();
  });

  it('counts an end whose start was never written, and a failed batch, as dropped', async () => {
    const recorder = new TraceRecorder(inner, 1_024, NEVER_MS);
    recorder.end('lost', succeeded);
    await recorder.flush();
    expect(recorder.droppedSignals).toBe(1);
    recorder.start(span('x'));
    recorder.start(span('x'));
    await recorder.flush();
    expect(recorder.droppedSignals).toBe(3);
    expect(await inner.listSpans('s1')).toEqual([]);
  });
});
