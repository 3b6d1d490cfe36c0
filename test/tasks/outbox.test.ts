import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboxRelay } from '../../src/tasks/outbox-relay.js';
import { TaskJournal } from '../../src/tasks/task-journal.js';
import { taskSpecSchema, taskTopology } from '../../src/index.js';
import { until } from '../support/poll.js';
import { TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';

if (TASK_SUITE_SKIP) console.log(`Task outbox suite skipped: ${TASK_SUITE_SKIP}`);

describe.skipIf(TASK_SUITE_SKIP !== null)('the outbox: events stored first, published later when their publication failed', () => {
  let stack: TaskStack;
  afterEach(async () => {
    await stack.close();
  });

  it('keeps events whose publish failed, in order, and the relay publishes them once, after which they are marked', async () => {
    stack = await new TaskStack().ready();
    const taskId = `task-${randomUUID()}`;
    await stack.tasks.createTask(taskId, taskSpecSchema.parse({ taskId, prompts: ['x'] }), Date.now());
    const warnings: string[] = [];
    // The broker is "away" for this journal: every publish fails after the event is stored.
    const journal = new TaskJournal(taskId, stack.tasks, () => Promise.reject(new Error('broker away')), undefined, Date.now, (m) => warnings.push(m));
    for (const n of [1, 2, 3]) await journal.append('progress', { stage: 'test', message: `event ${n}` });
    await journal.settled();
    expect(warnings).toHaveLength(3);
    expect((await stack.tasks.listUnpublished(Date.now(), 10)).map((e) => e.sequence)).toEqual([1, 2, 3]);

    const consumer = await stack.consumer('outbox');
    const link = await stack.link();
    const relay = new OutboxRelay(stack.tasks, link, taskTopology(stack.namespace), Date.now, () => undefined, { graceMs: 0, intervalMs: 60_000, batch: 100 });
    expect(await relay.sweep(0)).toBe(3);
    await until('three events', () => consumer.events.length === 3);
    expect(consumer.events.map((e) => e.payload.sequence)).toEqual([1, 2, 3]);
    expect(await stack.tasks.listUnpublished(Date.now(), 10)).toEqual([]);
    expect(await relay.sweep(0)).toBe(0);
  });
});
