import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { TASK_EVENT_TYPES, taskEventEnvelopeSchema, type TaskEventEnvelope } from '../../src/index.js';
import { until } from '../support/poll.js';
import { taskModel, TaskToolLog, taskTools } from '../support/task-model.js';
import { TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';
import type { TestHost } from '../support/host.js';

if (TASK_SUITE_SKIP) console.log(`Task API suite skipped: ${TASK_SUITE_SKIP}`);

/** Polls the task through the API until it is in `state`. */
async function untilState(host: TestHost, taskId: string, state: string): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> = {};
  await until(`task ${taskId} ${state}`, async () => {
    last = (await host.call('GET', `/tasks/${taskId}`)).body;
    return last.state === state;
  });
  return last;
}

async function eventsOf(host: TestHost, taskId: string): Promise<TaskEventEnvelope[]> {
  const page = await host.call('GET', `/tasks/${taskId}/events`);
  expect(page.status).toBe(200);
  return page.body.events as TaskEventEnvelope[];
}

/** The task's events once its last one, `session_closed`, is stored (it follows the terminal state). */
async function closedEvents(host: TestHost, taskId: string): Promise<TaskEventEnvelope[]> {
  let events: TaskEventEnvelope[] = [];
  await until(`session_closed of ${taskId}`, async () => (events = await eventsOf(host, taskId)).at(-1)?.payload.event_type === 'session_closed');
  return events;
}

const summary = (events: TaskEventEnvelope[]) =>
  events.map((e) => (e.payload.event_type === 'state_changed' ? `${e.payload.data.from_state}→${e.payload.data.to_state}` : e.payload.event_type));

describe.skipIf(TASK_SUITE_SKIP !== null)('tasks through the HTTP API, run by a worker (PostgreSQL + RabbitMQ)', () => {
  let stack: TaskStack;
  afterEach(async () => {
    await stack.close();
  });

  async function setUp(options: Parameters<TaskStack['worker']>[0] extends infer O ? Partial<O> : never = {}) {
    stack = await new TaskStack().ready();
    const log = new TaskToolLog();
    const model = taskModel();
    const worker = await stack.worker({ model, tools: taskTools(log), ...options });
    const host = await stack.host(model);
    return { log, model, worker, host };
  }

  it('runs a submitted task to COMPLETED: every event in the envelope, sequences 1…N, submitting again is the same task', async () => {
    const { host, log } = await setUp();
    const submitted = await host.call('POST', '/tasks', { taskId: 'task-a', prompts: ['steps 2', 'steps 1'], metadata: { team: 'ops' } });
    expect(submitted.status).toBe(201);
    expect(submitted.body).toMatchObject({ taskId: 'task-a', state: 'PENDING', turnCount: 2 });
    const done = await untilState(host, 'task-a', 'COMPLETED');
    expect(done).toMatchObject({ turnsDone: 2, riskLevel: 'R1', reason: 'all_turns_completed', lastCheckpoint: 'ckpt-turn-1' });
    expect(log.steps.map((s) => s.n)).toEqual([1, 2, 1]);

    const again = await host.call('POST', '/tasks', { taskId: 'task-a', prompts: ['something else'] });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ taskId: 'task-a', state: 'COMPLETED', turnCount: 2 });

    const events = await closedEvents(host, 'task-a');
    for (const event of events) expect(taskEventEnvelopeSchema.safeParse(event).success).toBe(true);
    expect(events.map((e) => e.payload.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events.every((e) => e.session_id === 'task-a' && e.hcp_version === '1.0' && e.type === 'event')).toBe(true);
    const types = new Set(events.map((e) => e.payload.event_type));
    for (const type of ['session_created', 'state_changed', 'progress', 'log', 'intermediate_result', 'checkpoint_created', 'session_closed']) expect(types).toContain(type);
    expect(summary(events).filter((s) => s.includes('→'))).toEqual(['PENDING→RUNNING', 'RUNNING→COMPLETED']);
    expect(events[0]!.payload).toMatchObject({ event_type: 'session_created', data: { state: 'RUNNING', risk_level: 'R1', metadata: { team: 'ops' } } });
    expect(events.at(-1)!.payload).toMatchObject({ event_type: 'session_closed', data: { final_state: 'COMPLETED' } });
    const checkpoints = events.filter((e) => e.payload.event_type === 'checkpoint_created').map((e) => e.payload.data.checkpoint_id);
    expect(checkpoints.filter((id) => String(id).startsWith('ckpt-tool-'))).toHaveLength(3);
    expect(checkpoints.filter((id) => String(id).startsWith('ckpt-turn-'))).toEqual(['ckpt-turn-0', 'ckpt-turn-1']);
    expect(TASK_EVENT_TYPES).toHaveLength(9);
  });

  it('lists the task routes in the OpenAPI document and answers bad requests with typed errors', async () => {
    const { host } = await setUp();
    const doc = await host.call('GET', '/openapi.json');
    const paths = Object.keys(doc.body.paths as object).filter((p) => p.startsWith('/tasks'));
    expect(paths.sort()).toEqual(['/tasks', '/tasks/{taskId}', '/tasks/{taskId}/abort', '/tasks/{taskId}/events', '/tasks/{taskId}/pause', '/tasks/{taskId}/resume']);
    expect((await host.call('POST', '/tasks', { taskId: 't', prompts: [] })).body).toMatchObject({ error: { code: 'InvalidInput' } });
    expect((await host.call('POST', '/tasks', { taskId: 't', prompts: ['x'], maxDurationMs: 0 })).status).toBe(400);
    expect((await host.call('GET', '/tasks/nope')).body).toMatchObject({ error: { code: 'UnknownTask' } });
    expect((await host.call('POST', '/tasks/nope/pause')).status).toBe(404);
  });

  it('rejects a task the admission gate refuses, with its reason, and refuses control of it (LC-1)', async () => {
    const { host, model } = await setUp({ admit: (task) => (task.spec.metadata.risk === 'high' ? { approve: false, reason: 'risk R5: not here' } : { approve: true, risk: 'R3' }) });
    await host.call('POST', '/tasks', { taskId: 'risky', prompts: ['steps 1'], metadata: { risk: 'high' } });
    const rejected = await untilState(host, 'risky', 'REJECTED');
    expect(rejected.reason).toBe('risk R5: not here');
    expect(model.calls).toBe(0);
    expect(summary(await closedEvents(host, 'risky'))).toEqual(['PENDING→REJECTED', 'session_closed']);
    const refused = await host.call('POST', '/tasks/risky/resume');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: { code: 'InvalidTransition', from: 'REJECTED', to: 'RUNNING' } });
  });

  it('pauses at the next checkpoint before a model call, holds there, and resumes from it', async () => {
    const { host, log, model, worker } = await setUp();
    await host.call('POST', '/tasks', { taskId: 'pausing', prompts: ['block', 'steps 1'] });
    await log.untilBlocked();
    await untilState(host, 'pausing', 'RUNNING');
    const pause = await host.call('POST', '/tasks/pausing/pause');
    expect(pause.status).toBe(202);
    // The request reaches the worker as a notice over the broker: the tool is released only once the
    // worker has taken it, so the checkpoint after the tool is the one that holds.
    await until('the worker took the pause', () => worker.runner('pausing')?.actor.getSnapshot().context.pauseRequested === true);
    // The tool still runs: RUNNING until the turn reaches its checkpoint.
    expect((await host.call('GET', '/tasks/pausing')).body.state).toBe('RUNNING');
    const callsBefore = model.calls;
    log.blocked[0]!.release();
    await untilState(host, 'pausing', 'PAUSED');
    expect(model.calls).toBe(callsBefore);
    expect((await host.call('POST', '/tasks/pausing/pause')).body).toMatchObject({ error: { code: 'InvalidTransition', from: 'PAUSED', to: 'PAUSED' } });
    expect((await host.call('POST', '/tasks/pausing/resume')).status).toBe(202);
    await untilState(host, 'pausing', 'COMPLETED');
    const transitions = summary(await closedEvents(host, 'pausing')).filter((s) => s.includes('→'));
    expect(transitions).toEqual(['PENDING→RUNNING', 'RUNNING→PAUSED', 'PAUSED→RUNNING', 'RUNNING→COMPLETED']);
  });

  it('aborts a running task: the running tool is cancelled, then ABORTED and session_closed (LC-4)', async () => {
    const { host, log } = await setUp();
    await host.call('POST', '/tasks', { taskId: 'doomed', prompts: ['block', 'steps 1'] });
    await log.untilBlocked();
    await untilState(host, 'doomed', 'RUNNING');
    expect((await host.call('POST', '/tasks/doomed/abort')).status).toBe(202);
    await untilState(host, 'doomed', 'ABORTED');
    expect(log.blocked[0]!.signal.aborted).toBe(true);
    expect(log.steps).toEqual([]);
    const events = await closedEvents(host, 'doomed');
    expect(summary(events).filter((s) => s.includes('→'))).toEqual(['PENDING→RUNNING', 'RUNNING→ABORTING', 'ABORTING→ABORTED']);
    expect(events.at(-1)!.payload).toMatchObject({ event_type: 'session_closed', data: { final_state: 'ABORTED', reason: 'aborted' } });
  });

  it('aborts a paused task', async () => {
    const { host, log } = await setUp();
    await host.call('POST', '/tasks', { taskId: 'paused-doomed', prompts: ['block', 'steps 1'] });
    await log.untilBlocked();
    await untilState(host, 'paused-doomed', 'RUNNING');
    await host.call('POST', '/tasks/paused-doomed/pause');
    log.blocked[0]!.release();
    await untilState(host, 'paused-doomed', 'PAUSED');
    expect((await host.call('POST', '/tasks/paused-doomed/abort')).status).toBe(202);
    await untilState(host, 'paused-doomed', 'ABORTED');
  });

  it('fails a task that runs past its max duration with reason timeout (the charts on a simulated clock)', async () => {
    const clock = new SimulatedClock();
    const { host, log } = await setUp({ clock });
    await host.call('POST', '/tasks', { taskId: 'slow', prompts: ['block'], maxDurationMs: 60_000 });
    await log.untilBlocked();
    clock.increment(60_000);
    const failed = await untilState(host, 'slow', 'FAILED');
    expect(failed.reason).toBe('timeout');
    expect(log.blocked[0]!.signal.aborted).toBe(true);
    expect((await closedEvents(host, 'slow')).at(-1)!.payload).toMatchObject({ data: { final_state: 'FAILED', reason: 'timeout' } });
  });
});
