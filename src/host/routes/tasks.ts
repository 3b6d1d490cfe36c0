import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { TaskControl, TaskRow } from '../../../storage/task-storage.js';
import { mayAccess, type Caller } from '../../protocol/principal.js';
import { callerOf } from '../auth.js';
import { requestTaskControl, submitTask, type TaskClient } from '../../tasks/task-client.js';
import { toEnvelope } from '../../tasks/task-envelope.js';
import { ApiError, viaStorage } from '../errors.js';
import { takesNoBody } from '../media-type.js';
import { errors, TraceHeaders } from '../schemas.js';
import { traceParentFromHeader } from '../../protocol/trace-context.js';
import { SubmitTaskBody, TaskEventPage, TaskEventsQuery, TaskParams, TaskView, taskView } from '../task-schemas.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const submit = createRoute({
  method: 'post',
  path: '/tasks',
  summary: 'Submit a task: stored PENDING, then queued for a worker',
  description: 'Idempotent by `taskId`: 201 when it is new, 200 with the stored task when that id was submitted before.',
  request: { headers: TraceHeaders, body: { content: json(SubmitTaskBody), required: true } },
  responses: { 201: { description: 'submitted', content: json(TaskView) }, 200: { description: 'already submitted', content: json(TaskView) }, ...errors(400, 401, 403, 409, 413, 415, 503) },
});

const get = createRoute({
  method: 'get',
  path: '/tasks/{taskId}',
  summary: 'Where a task stands',
  request: { params: TaskParams },
  responses: { 200: { description: 'the task', content: json(TaskView) }, ...errors(400, 401, 404, 503) },
});

const events = createRoute({
  method: 'get',
  path: '/tasks/{taskId}/events',
  summary: "The task's stored events in the seed's envelope, by sequence (how a consumer fills a gap or catches up)",
  request: { params: TaskParams, query: TaskEventsQuery },
  responses: { 200: { description: 'a page of events', content: json(TaskEventPage) }, ...errors(400, 401, 404, 503) },
});

function controlRoute(control: TaskControl) {
  return createRoute({
    method: 'post',
    path: `/tasks/{taskId}/${control}`,
    summary: `Ask the task's worker, wherever it runs, to ${control} it`,
    description:
      'Recorded on the task first, then sent to the owning worker; 202 once recorded. A transition LC-1 does not allow from the stored state is 409 `InvalidTransition`. ' +
      (control === 'pause' ? 'A pause takes effect at the next checkpoint (before a model call, or between turns).' : ''),
    request: { params: TaskParams },
    middleware: [takesNoBody],
    responses: { 202: { description: 'requested', content: json(TaskView) }, ...errors(400, 401, 403, 404, 409, 415, 503) },
  });
}

/** The task API, on a host started with RabbitMQ (`--amqp-url`); a host without one has no task routes. */
export function taskRoutes(app: OpenAPIHono, tasks: TaskClient): void {
  const client = (): TaskClient => tasks;

  app.openapi(submit, async (c) => {
    const caller = callerOf(c);
    // Issue 27: the caller's trace context travels in the task's message to the worker that runs it.
    const traceParent = traceParentFromHeader(c.req.valid('header').traceparent);
    const { created, task } = await viaStorage(() => submitTask(client(), c.req.valid('json'), caller.principal, traceParent));
    // Task ids are the client's: one another principal already used is refused, never answered with their task.
    if (!mayAccess(caller, task.principal)) throw new ApiError('TaskExists', `task id '${task.id}' is taken; submit under another id`);
    return c.json(taskView(task), created ? 201 : 200);
  });

  app.openapi(get, async (c) => {
    const task = await taskOf(client(), c.req.valid('param').taskId, callerOf(c));
    return c.json(taskView(task), 200);
  });

  app.openapi(events, async (c) => {
    const { taskId } = c.req.valid('param');
    const { after, limit } = c.req.valid('query');
    const tasks = client().tasks;
    await taskOf(client(), taskId, callerOf(c));
    const rows = await viaStorage(() => tasks.listTaskEvents(taskId, { ...(after !== undefined && { afterSequence: after }), limit }));
    return c.json({ events: rows.map(toEnvelope), nextAfter: rows.length === limit ? rows.at(-1)!.sequence : null }, 200);
  });

  for (const control of ['pause', 'resume', 'abort'] as const) {
    app.openapi(controlRoute(control), async (c) => {
      const { taskId } = c.req.valid('param');
      await taskOf(client(), taskId, callerOf(c));
      const result = await viaStorage(() => requestTaskControl(client(), taskId, control));
      if (!result.ok) {
        const { code, ...details } = result.error;
        throw new ApiError(code, 'message' in details ? String(details.message) : `${control} is not allowed while the task is ${'from' in details ? details.from : ''}`, details);
      }
      return c.json(taskView(result.task), 202);
    });
  }
}

/** The task if the caller may see it (issue 25); another principal's answers `UnknownTask`, as a missing one does. */
async function taskOf(client: TaskClient, taskId: string, caller: Caller): Promise<TaskRow> {
  const task = await viaStorage(() => client.tasks.getTask(taskId));
  if (!task || !mayAccess(caller, task.principal)) throw new ApiError('UnknownTask', `no task '${taskId}'`);
  return task;
}
