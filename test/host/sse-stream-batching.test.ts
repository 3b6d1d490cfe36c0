import { describe, expect, it, vi } from 'vitest';
import { sessionEventStream, type SseOptions } from '../../src/host/sse-stream.js';
import type { FeedSink, FeedStart, UpdateFeed } from '../../src/host/session-access.js';
import type { SessionSnapshot } from '../../src/protocol/session-snapshot.js';
import { UPDATE_VERSION, type UpdateEnvelope } from '../../src/protocol/updates.js';

const SESSION = 'ses_00000000-0000-7000-8000-000000000000';

const snapshot = (lastUpdateSequence: number): SessionSnapshot => ({
  version: 8,
  sessionId: SESSION,
  lastUpdateSequence,
  permissionMode: 'auto',
  busyPolicy: 'reject',
  queue: [],
  sandbox: { kind: 'none', reason: null },
  runtime: { kind: 'idle' },
});

const envelope = (sequence: number): UpdateEnvelope => ({
  version: UPDATE_VERSION,
  sessionId: SESSION,
  turnId: 'turn_1',
  sequence,
  occurredAtMs: 0,
  update: { type: 'text_delta', text: `d${sequence} ` },
});

/** A feed the test drives by hand: `sink` is the stream's subscription once it has started. */
function manualFeed(start: FeedStart): UpdateFeed & { sink: FeedSink | null; unsubscribed: boolean } {
  const feed = {
    start,
    sink: null as FeedSink | null,
    unsubscribed: false,
    subscribe(sink: FeedSink) {
      feed.sink = sink;
      return () => {
        feed.unsubscribed = true;
      };
    },
  };
  return feed;
}

const options: SseOptions = { heartbeatMs: 60_000, bufferBytes: 1024 * 1024 };
const decoder = new TextDecoder();

/** Reads every chunk until the stream ends. */
async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const chunks: string[] = [];
  for await (const chunk of stream) chunks.push(decoder.decode(chunk));
  return chunks;
}

const idsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('session event stream: frames of one task go out as one chunk', () => {
  it('keeps the order and every id, a chunk per burst, and sends what waits before the end', async () => {
    const feed = manualFeed({ kind: 'snapshot', snapshot: snapshot(0) });
    const stream = sessionEventStream(feed, options);
    const read = chunksOf(stream);
    // A burst of updates from one task, and its microtasks, as a model step's deltas come.
    for (let sequence = 1; sequence <= 5; sequence++) feed.sink!.update(envelope(sequence));
    await Promise.resolve();
    feed.sink!.update(envelope(6));
    await tick();
    // A second burst, after an I/O turn of the loop; a duplicate sequence is dropped as before.
    feed.sink!.update(envelope(7));
    feed.sink!.update(envelope(7));
    feed.sink!.update(envelope(8));
    await tick();
    // The last update and the end in the same task: the update goes out, then the stream ends.
    feed.sink!.update(envelope(9));
    feed.sink!.end();
    const chunks = await read;

    const text = chunks.join('');
    expect(text.startsWith('retry: 1000\n\nevent: snapshot\nid: 0\n')).toBe(true);
    expect(idsIn(text)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Every frame is whole: split on blank lines, each data line is one envelope's JSON.
    const data = [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as { sequence?: number });
    expect(data.slice(1).map((d) => d.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The start and the first burst, the second burst, the last update: three chunks, not eleven.
    expect(chunks).toHaveLength(3);
    expect(idsIn(chunks[0]!)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(idsIn(chunks[1]!)).toEqual([7, 8]);
    expect(idsIn(chunks[2]!)).toEqual([9]);
    expect(feed.unsubscribed).toBe(true);
  });

  it('a replay goes out in order and the live updates follow it without a gap', async () => {
    const feed = manualFeed({ kind: 'replay', after: 2, updates: [envelope(3), envelope(4)] });
    const stream = sessionEventStream(feed, options);
    const read = chunksOf(stream);
    // Live updates that overlap the replay are duplicates and dropped.
    feed.sink!.update(envelope(4));
    feed.sink!.update(envelope(5));
    await tick();
    feed.sink!.end();
    expect(idsIn((await read).join(''))).toEqual([3, 4, 5]);
  });

  it('a client that cancels drops what was waiting and unsubscribes', async () => {
    const feed = manualFeed({ kind: 'snapshot', snapshot: snapshot(0) });
    const stream = sessionEventStream(feed, options);
    const reader = stream.getReader();
    await tick();
    expect(decoder.decode((await reader.read()).value)).toContain('event: snapshot');
    feed.sink!.update(envelope(1));
    await reader.cancel();
    await tick();
    expect(feed.unsubscribed).toBe(true);
    // Updates after the cancel are ignored, and nothing throws from the waiting flush.
    feed.sink!.update(envelope(2));
    await tick();
  });

  it('serializes an update once for all the clients following its session', async () => {
    const feeds = [manualFeed({ kind: 'snapshot', snapshot: snapshot(0) }), manualFeed({ kind: 'snapshot', snapshot: snapshot(0) })];
    const reads = feeds.map((feed) => chunksOf(sessionEventStream(feed, options)));
    const updates = [envelope(1), envelope(2), envelope(3)];
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      // As the session's update stream delivers: each envelope to every subscriber in turn.
      for (const update of updates) for (const feed of feeds) feed.sink!.update(update);
      expect(stringify.mock.calls.filter(([value]) => updates.includes(value as UpdateEnvelope))).toHaveLength(3);
    } finally {
      stringify.mockRestore();
    }
    for (const feed of feeds) feed.sink!.end();
    const [first, second] = (await Promise.all(reads)).map((chunks) => chunks.join(''));
    expect(idsIn(first!)).toEqual([0, 1, 2, 3]);
    expect(second).toBe(first);
  });

  it('a client past its buffer is cut off when the next frame comes, as before', async () => {
    const feed = manualFeed({ kind: 'snapshot', snapshot: snapshot(0) });
    let lagged = 0;
    let disconnected = 0;
    const stream = sessionEventStream(feed, { heartbeatMs: 60_000, bufferBytes: 2_000, lagged: () => (lagged += 1) }, () => (disconnected += 1));
    // Nobody reads: one burst of about 3 KB goes out as one chunk (the client was caught up) …
    for (let sequence = 1; sequence <= 30; sequence++) feed.sink!.update(envelope(sequence));
    await tick();
    expect(lagged).toBe(0);
    // … and the next frame finds the client behind.
    feed.sink!.update(envelope(31));
    expect(lagged).toBe(1);
    expect(disconnected).toBe(1);
    expect(feed.unsubscribed).toBe(true);
    await stream.cancel();
  });
});
