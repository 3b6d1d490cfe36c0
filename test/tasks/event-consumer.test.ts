import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { eventRoutingKey, storageFetcher, taskSpecSchema, taskTopology, toEnvelope, type AmqpLink, type TaskEventEnvelope } from '../../src/index.js';
import { until } from '../support/poll.js';
import { TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';

if (TASK_SUITE_SKIP) console.log(`Task event consumer suite skipped: ${TASK_SUITE_SKIP}`);

describe.skipIf(TASK_SUITE_SKIP !== null)('createTaskEventConsumer (LC-3) on RabbitMQ, positions and missing ranges in PostgreSQL', () => {
  let stack: TaskStack;
  let link: AmqpLink;
  afterEach(async () => {
    await stack.close();
  });

  /** A task with `count` stored events; their envelopes by sequence. */
  async function storedEvents(count: number): Promise<{ taskId: string; events: TaskEventEnvelope[] }> {
    stack = stack ?? (await new TaskStack().ready());
    const taskId = `task-${randomUUID()}`;
    await stack.tasks.createTask(taskId, taskSpecSchema.parse({ taskId, prompts: ['x'] }), Date.now());
    const events: TaskEventEnvelope[] = [];
    for (let n = 1; n <= count; n++) {
      const row = await stack.tasks.appendTaskEvent(taskId, { messageId: randomUUID(), eventType: 'progress', data: { stage: 'test', message: `event ${n}` }, createdAtMs: Date.now() }, null);
      events.push(toEnvelope(row));
    }
    return { taskId, events };
  }

  async function publish(events: TaskEventEnvelope[], order: number[]): Promise<void> {
    const exchange = taskTopology(stack.namespace).eventsExchange;
    for (const sequence of order) await link.publish(exchange, eventRoutingKey(events[sequence - 1]!.session_id), events[sequence - 1]);
  }

  const sequences = (events: TaskEventEnvelope[]) => events.map((e) => e.payload.sequence);

  async function start(noFetch = false) {
    stack = await new TaskStack().ready();
    link = await stack.link();
    return noFetch ? { fetchRange: async () => [] } : {};
  }

  it('handles events in sequence order whatever order they arrive in', async () => {
    const extra = await start(true);
    const { events } = await storedEvents(5);
    const consumer = await stack.consumer('reorder', extra);
    await publish(events, [3, 1, 2, 5, 4]);
    await until('five events', () => consumer.events.length === 5);
    expect(sequences(consumer.events)).toEqual([1, 2, 3, 4, 5]);
    expect(consumer.gaps).toEqual([
      { sessionId: events[0]!.session_id, from: 1, to: 2 },
      { sessionId: events[0]!.session_id, from: 4, to: 4 },
    ]);
  });

  it('drops duplicates by last_processed_sequence and still acknowledges them', async () => {
    const extra = await start(true);
    const { taskId, events } = await storedEvents(3);
    const consumer = await stack.consumer('dedup', extra);
    await publish(events, [1, 2, 2, 1, 3, 3]);
    await until('three events and three duplicates', () => consumer.events.length === 3 && consumer.duplicates.length === 3);
    expect(sequences(consumer.events)).toEqual([1, 2, 3]);
    expect(sequences(consumer.duplicates)).toEqual([2, 1, 3]);
    expect(await consumer.lastProcessed(taskId)).toBe(3);
  });

  it('flags a gap and fetches the missing range from storage before the event after it', async () => {
    await start();
    const { taskId, events } = await storedEvents(6);
    const consumer = await stack.consumer('gaps');
    await publish(events, [1, 4, 6]);
    await until('six events', () => consumer.events.length === 6);
    expect(sequences(consumer.events)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(consumer.gaps).toEqual([
      { sessionId: taskId, from: 2, to: 3 },
      { sessionId: taskId, from: 5, to: 5 },
    ]);
    // The events fetched are the stored ones, exactly as they would have arrived.
    expect(consumer.events[1]).toEqual(events[1]);
  });

  it('restores its position after a restart from the storage it names, and catches up the tail from storage', async () => {
    await start();
    const { taskId, events } = await storedEvents(6);
    const first = await stack.consumer('restart');
    await publish(events, [1, 2, 3]);
    await until('three events', () => first.events.length === 3);
    // Handled, saved and acknowledged (a consumer closed before its ack gets that event again: at least once).
    expect(await first.lastProcessed(taskId)).toBe(3);
    await first.close();
    // A redelivery of what it had handled, and two new events, to the consumer back from its restart.
    await publish(events, [2, 3, 4, 5]);
    const again = await stack.consumer('restart');
    await until('two new events', () => again.events.length === 2);
    expect(sequences(again.events)).toEqual([4, 5]);
    expect(sequences(again.duplicates)).toEqual([2, 3]);
    await again.catchUp(taskId);
    expect(sequences(again.events)).toEqual([4, 5, 6]);
    expect(await again.lastProcessed(taskId)).toBe(6);
    expect((await storageFetcher(stack.tasks)(taskId, 5)).map((e) => e.payload.sequence)).toEqual([6]);
  });

  it('acknowledges and drops a message that is not a task event', async () => {
    const extra = await start(true);
    const { events } = await storedEvents(1);
    const warnings: string[] = [];
    const consumer = await stack.consumer('garbage', { ...extra, warn: (m) => warnings.push(m) });
    const exchange = taskTopology(stack.namespace).eventsExchange;
    await link.publish(exchange, eventRoutingKey(events[0]!.session_id), { not: 'an event' });
    await publish(events, [1]);
    await until('the real event', () => consumer.events.length === 1);
    expect(warnings.some((w) => w.includes('not a task event'))).toBe(true);
  });
});
