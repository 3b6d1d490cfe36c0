import { afterEach, describe, expect, it } from 'vitest';
import { traceParentSchema } from '../../src/protocol/trace-context.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { taskModel, TaskToolLog, taskTools } from '../support/task-model.js';
import { TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';
import { CALLER_TRACE_PARENT, TurnSpanLog } from '../support/turn-span-log.js';
import { userMessage } from '../support/ui-chat-client.js';

const turnBody = (clientRequestId: string) => ({ clientRequestId, input: [{ type: 'text', text: 'hello' }] });

/** The header parameters the OpenAPI document declares for a route. */
function headersOf(doc: Record<string, unknown>, path: string): unknown[] {
  const operation = (doc.paths as Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>)[path]!.post!;
  return (operation.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
}

/**
 * Issue 27 over real HTTP on loopback: a `traceparent` header on the routes that start turns reaches
 * the turn span's start facts (the OpenTelemetry exporter makes the span its child); an invalid one is
 * ignored, as W3C has receivers do — the turn runs under a root of its own.
 */
describe.each(durableTargets)('the traceparent header on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  let spans: TurnSpanLog | undefined;
  afterEach(async () => {
    spans?.close();
    await host?.close();
    await db?.drop();
    host = db = spans = undefined;
  });

  async function start(replies: number) {
    db = create();
    host = await testHost(db, Array.from({ length: replies }, (_, i) => ({ text: `reply ${i}` })));
    spans = new TurnSpanLog(host.runtime);
    return { host, spans };
  }

  it.skipIf(skip)('POST /sessions/:id/turns: the header is the parent of the turn span; a later version is read as 00', async () => {
    const { host, spans } = await start(2);
    const sessionId = await newSession(host);
    const started = await host.call('POST', `/sessions/${sessionId}/turns`, turnBody('r1'), { traceparent: CALLER_TRACE_PARENT });
    expect(started.status).toBe(202);
    expect((await spans.started(`turn:${started.body.turnId as string}`)).traceParent).toBe(CALLER_TRACE_PARENT);
    expect((await host.storage.getTurn(started.body.turnId as string))?.traceParent).toBe(CALLER_TRACE_PARENT);
    await finished(host, sessionId, started.body.turnId as string);

    const later = await host.call('POST', `/sessions/${sessionId}/turns`, turnBody('r2'), { traceparent: '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more' });
    expect(later.status).toBe(202);
    expect((await spans.started(`turn:${later.body.turnId as string}`)).traceParent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  });

  it.skipIf(skip)('an invalid header is ignored, not refused: the turn runs under a synthetic root', async () => {
    const { host, spans } = await start(2);
    const sessionId = await newSession(host);
    const upper = '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01';
    const started = await host.call('POST', `/sessions/${sessionId}/turns`, turnBody('r1'), { traceparent: upper });
    expect(started.status).toBe(202);
    const facts = await spans.started(`turn:${started.body.turnId as string}`);
    expect(traceParentSchema.safeParse(facts.traceParent).success).toBe(true);
    expect(facts.traceParent).not.toBe(upper.toLowerCase());

    // The body is no way in: the route's body stays strict.
    const inBody = await host.call('POST', `/sessions/${sessionId}/turns`, { ...turnBody('r2'), traceParent: CALLER_TRACE_PARENT });
    expect(inBody).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput' } } });
  });

  it.skipIf(skip)('POST /api/chat: the header is the parent of the turn span', async () => {
    const { host, spans } = await start(1);
    const response = await fetch(`${host.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: CALLER_TRACE_PARENT },
      body: JSON.stringify({ id: 'chat-traced', messages: [userMessage('u1', 'hello')], trigger: 'submit-message' }),
    });
    expect(response.status).toBe(200);
    // The response ends with the turn.
    expect(await response.text()).toContain('"type":"finish"');
    const [turn] = await host.storage.listTurns('chat-traced');
    expect((await spans.started(`turn:${turn!.id}`)).traceParent).toBe(CALLER_TRACE_PARENT);
    expect(turn!.traceParent).toBe(CALLER_TRACE_PARENT);
  });

  it.skipIf(skip)('the OpenAPI document declares the header on the routes that start turns', async () => {
    const { host } = await start(0);
    const doc = await host.call('GET', '/openapi.json');
    expect(headersOf(doc.body, '/sessions/{sessionId}/turns')).toEqual(['traceparent']);
    expect(headersOf(doc.body, '/api/chat')).toEqual(['traceparent']);
  });
});

describe.skipIf(TASK_SUITE_SKIP !== null)('the traceparent header on POST /tasks (PostgreSQL + RabbitMQ)', () => {
  let stack: TaskStack | undefined;
  let spans: TurnSpanLog | undefined;
  afterEach(async () => {
    spans?.close();
    await stack?.close();
    stack = spans = undefined;
  });

  it("travels in the task's message: every turn the worker runs for the task is a child of the caller's span", async () => {
    stack = await new TaskStack().ready();
    const model = taskModel();
    const worker = await stack.worker({ model, tools: taskTools(new TaskToolLog()) });
    spans = new TurnSpanLog(worker.runtime);
    const host = await stack.host(model);
    const submitted = await host.call('POST', '/tasks', { taskId: 'traced-task', prompts: ['steps 1', 'steps 1'] }, { traceparent: CALLER_TRACE_PARENT });
    expect(submitted.status).toBe(201);
    await until('the task completed', async () => (await host.call('GET', '/tasks/traced-task')).body.state === 'COMPLETED');
    const turnStarts = spans.starts.filter((s) => !s.id.endsWith(':resumed'));
    expect(turnStarts).toHaveLength(2);
    expect(turnStarts.map((s) => s.facts.traceParent)).toEqual([CALLER_TRACE_PARENT, CALLER_TRACE_PARENT]);
    expect(headersOf((await host.call('GET', '/openapi.json')).body, '/tasks')).toEqual(['traceparent']);
  });

  it('an invalid header is ignored: the task runs, its turns under roots of their own', async () => {
    stack = await new TaskStack().ready();
    const model = taskModel();
    const worker = await stack.worker({ model, tools: taskTools(new TaskToolLog()) });
    spans = new TurnSpanLog(worker.runtime);
    const host = await stack.host(model);
    const submitted = await host.call('POST', '/tasks', { taskId: 'untraced-task', prompts: ['steps 1'] }, { traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    expect(submitted.status).toBe(201);
    await until('the task completed', async () => (await host.call('GET', '/tasks/untraced-task')).body.state === 'COMPLETED');
    const [turn] = spans.starts;
    expect(traceParentSchema.safeParse(turn!.facts.traceParent).success).toBe(true);
    expect(turn!.facts.traceParent).not.toBe(CALLER_TRACE_PARENT);
  });
});
