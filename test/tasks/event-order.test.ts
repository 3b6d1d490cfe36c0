import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { KyselyTaskStorage } from '../../storage/kysely-task-storage.js';
import { sqliteDatabase } from '../../storage/sqlite.js';
import { EventOrder, type FetchRange, type Gap, type PositionStore } from '../../src/tasks/event-order.js';
import { storageFetcher, storagePositions } from '../../src/tasks/event-consumer.js';
import { taskSpecSchema } from '../../src/protocol/task-spec.js';
import { toEnvelope, type TaskEventEnvelope } from '../../src/tasks/task-envelope.js';

/**
 * LC-3's ordering without a broker: the consumer's reorder, de-duplication and gap filling, fed
 * deliveries by hand. A delivery is a plain label; the fake transport records what is acknowledged
 * and what is handed back. Missing ranges and positions come from a real task storage on SQLite.
 */

const TASK = 'task-1';

/** An event envelope of `TASK` with this sequence, as a worker would have published it. */
function envelope(sequence: number, taskId = TASK): TaskEventEnvelope {
  return {
    hcp_version: '1.0',
    message_id: `m-${taskId}-${sequence}`,
    timestamp: new Date(1_700_000_000_000 + sequence).toISOString(),
    session_id: taskId,
    type: 'event',
    payload: { event_type: 'progress', sequence, data: { stage: 'test', message: `event ${sequence}` } },
  };
}

/** Positions in memory: what a consumer that never restarts would keep. */
function memoryPositions(start: Record<string, number> = {}): PositionStore & { saved: Record<string, number> } {
  const saved = { ...start };
  return { saved, load: async (id) => saved[id] ?? 0, save: async (id, sequence) => void (saved[id] = sequence) };
}

const noFetch: FetchRange = async () => [];

/** The ordering with a recording transport; deliveries are labels `d<sequence>` (or any label given). */
function ordering(options: { positions?: PositionStore; fetchRange?: FetchRange; handle?: (event: TaskEventEnvelope) => void | Promise<void> } = {}) {
  const handled: TaskEventEnvelope[] = [];
  const gaps: Gap[] = [];
  const duplicates: number[] = [];
  const acked: string[] = [];
  const requeued: string[] = [];
  const warnings: string[] = [];
  const order = new EventOrder<string>(
    {
      positions: options.positions ?? memoryPositions(),
      fetchRange: options.fetchRange ?? noFetch,
      handle: async (event) => {
        await options.handle?.(event);
        handled.push(event);
      },
      onGap: (gap) => gaps.push(gap),
      onDuplicate: (event) => duplicates.push(event.payload.sequence),
      warn: (message) => warnings.push(message),
    },
    { ack: (deliveries) => acked.push(...deliveries), requeue: (delivery) => requeued.push(delivery) },
  );
  /** Delivers the events of these sequences in this order, each settled before the next arrives. */
  const deliver = async (sequences: number[], taskId = TASK) => {
    for (const sequence of sequences) await order.receive(envelope(sequence, taskId), `d${sequence}${taskId === TASK ? '' : `@${taskId}`}`);
  };
  const sequences = (taskId = TASK) => handled.filter((e) => e.session_id === taskId).map((e) => e.payload.sequence);
  return { order, handled, gaps, duplicates, acked, requeued, warnings, deliver, sequences };
}

describe('the task event consumer’s ordering (LC-3), without a broker', () => {
  it('handles events in sequence order whatever order they arrive in; each delivery is acknowledged only once its event is handled', async () => {
    const o = ordering();
    await o.deliver([3, 1]);
    // 3 waits for 2: handled 1 only, and 3's delivery still unacknowledged.
    expect(o.sequences()).toEqual([1]);
    expect(o.acked).toEqual(['d1']);
    await o.deliver([2, 5, 4]);
    expect(o.sequences()).toEqual([1, 2, 3, 4, 5]);
    expect(o.acked).toEqual(['d1', 'd2', 'd3', 'd4', 'd5']);
    expect(o.gaps).toEqual([
      { sessionId: TASK, from: 1, to: 2 },
      { sessionId: TASK, from: 4, to: 4 },
    ]);
    expect(await o.order.lastProcessed(TASK)).toBe(5);
  });

  it('drops duplicates by last_processed_sequence and still acknowledges them; a second delivery of an event held ahead is acknowledged with it', async () => {
    const o = ordering();
    await o.deliver([1, 2, 2, 1]);
    expect(o.sequences()).toEqual([1, 2]);
    expect(o.duplicates).toEqual([2, 1]);
    expect(o.acked).toEqual(['d1', 'd2', 'd2', 'd1']);
    // 4 arrives twice while 3 is missing: held once, both deliveries acknowledged when it is handled.
    await o.order.receive(envelope(4), 'first');
    await o.order.receive(envelope(4), 'second');
    expect(o.sequences()).toEqual([1, 2]);
    await o.deliver([3]);
    expect(o.sequences()).toEqual([1, 2, 3, 4]);
    expect(o.acked.slice(4)).toEqual(['d3', 'first', 'second']);
    expect(o.duplicates).toEqual([2, 1]);
  });

  it('keeps each session’s order on its own', async () => {
    const o = ordering();
    await o.deliver([2], 'other');
    await o.deliver([1, 2]);
    expect(o.sequences()).toEqual([1, 2]);
    expect(o.sequences('other')).toEqual([]);
    await o.deliver([1], 'other');
    expect(o.sequences('other')).toEqual([1, 2]);
  });

  it('hands a delivery whose handling failed back for redelivery, without moving the position; its redelivery is handled, then what waited behind it', async () => {
    let failOnce = true;
    const positions = memoryPositions();
    const o = ordering({
      positions,
      handle: (event) => {
        if (event.payload.sequence === 2 && failOnce) {
          failOnce = false;
          throw new Error('the application is down');
        }
      },
    });
    await o.deliver([1, 2, 3]);
    expect(o.sequences()).toEqual([1]);
    expect(o.requeued).toEqual(['d2']);
    expect(o.warnings).toEqual([`session ${TASK}: event 2 left for redelivery (the application is down)`]);
    expect(positions.saved[TASK]).toBe(1);
    expect(o.acked).toEqual(['d1']);
    await o.deliver([2]);
    expect(o.sequences()).toEqual([1, 2, 3]);
    expect(o.acked).toEqual(['d1', 'd2', 'd3']);
    expect(positions.saved[TASK]).toBe(3);
  });

  it('reads a position that could not be loaded again on the next delivery', async () => {
    let fail = true;
    const positions: PositionStore = {
      load: async () => {
        if (fail) throw new Error('database away');
        return 0;
      },
      save: async () => undefined,
    };
    const o = ordering({ positions });
    await o.deliver([1]);
    expect(o.requeued).toEqual(['d1']);
    fail = false;
    await o.deliver([1]);
    expect(o.sequences()).toEqual([1]);
  });
});

describe('the ordering on a real task storage (SQLite): gaps filled from storage, positions restored', () => {
  let tasks: KyselyTaskStorage;
  afterEach(async () => {
    await tasks.close();
  });

  /** A task with `count` stored events; their envelopes, as storage gives them. */
  async function storedEvents(count: number): Promise<TaskEventEnvelope[]> {
    tasks = new KyselyTaskStorage(sqliteDatabase({ filename: ':memory:' }), { dialect: 'sqlite' });
    await tasks.migrate();
    await tasks.createTask(TASK, taskSpecSchema.parse({ taskId: TASK, prompts: ['x'] }), Date.now());
    const events: TaskEventEnvelope[] = [];
    for (let n = 1; n <= count; n++) {
      const row = await tasks.appendTaskEvent(TASK, { messageId: randomUUID(), eventType: 'progress', data: { stage: 'test', message: `event ${n}` }, createdAtMs: Date.now() }, null);
      events.push(toEnvelope(row));
    }
    return events;
  }

  it('flags a gap and fetches the missing range from storage before the event after it', async () => {
    const events = await storedEvents(6);
    const o = ordering({ fetchRange: storageFetcher(tasks) });
    for (const sequence of [1, 4, 6]) await o.order.receive(events[sequence - 1]!, `d${sequence}`);
    expect(o.sequences()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(o.gaps).toEqual([
      { sessionId: TASK, from: 2, to: 3 },
      { sessionId: TASK, from: 5, to: 5 },
    ]);
    // The events fetched are the stored ones, exactly as they would have arrived; only deliveries are acknowledged.
    expect(o.handled).toEqual(events);
    expect(o.acked).toEqual(['d1', 'd4', 'd6']);
    // A late delivery of an event fetched from storage is a duplicate.
    await o.order.receive(events[1]!, 'late2');
    expect(o.duplicates).toEqual([2]);
    expect(o.acked.at(-1)).toBe('late2');
  });

  it('restores its position after a restart from the storage it names, drops what it had handled, and catches up the tail from storage', async () => {
    const events = await storedEvents(6);
    const first = ordering({ positions: storagePositions(tasks, 'consumer-a'), fetchRange: storageFetcher(tasks) });
    for (const sequence of [1, 2, 3]) await first.order.receive(events[sequence - 1]!, `d${sequence}`);
    expect(await tasks.loadPosition('consumer-a', TASK)).toBe(3);

    // A new ordering on the same storage: a consumer back from its restart. Another consumer's position is its own.
    const again = ordering({ positions: storagePositions(tasks, 'consumer-a'), fetchRange: storageFetcher(tasks) });
    for (const sequence of [2, 3, 4, 5]) await again.order.receive(events[sequence - 1]!, `d${sequence}`);
    expect(again.sequences()).toEqual([4, 5]);
    expect(again.duplicates).toEqual([2, 3]);
    expect(again.acked).toEqual(['d2', 'd3', 'd4', 'd5']);
    await again.order.catchUp(TASK);
    expect(again.sequences()).toEqual([4, 5, 6]);
    expect(await again.order.lastProcessed(TASK)).toBe(6);
    expect(await tasks.loadPosition('consumer-b', TASK)).toBe(0);
  });
});
