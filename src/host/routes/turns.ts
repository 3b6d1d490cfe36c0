import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { callerOf } from '../auth.js';
import { sessionOf, unwrap, type HostContext } from '../host-context.js';
import { takesNoBody } from '../media-type.js';
import { AcceptedTurn, DecisionBody, errors, Ok, PermissionParams, SessionParams, StartTurnBody, TraceHeaders, TurnParams, TurnState, WaitQuery } from '../schemas.js';
import { traceParentFromHeader } from '../../protocol/trace-context.js';
import type { TurnStatusResult } from '../../protocol/command-results.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const start = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/turns',
  summary: 'Start a turn; answered 202 once the user message (or the queued turn) is durably stored',
  description:
    'Unlike the in-process `startTurn`, which answers before anything is written, this answers only after the durable write. ' +
    'The same `clientRequestId` answers with the same turn. Under the `reject` policy a busy session answers 409 Busy; ' +
    'under `enqueue` and `interrupt` the turn is queued (`status: "queued"`).',
  request: { params: SessionParams, headers: TraceHeaders, body: { content: json(StartTurnBody), required: true } },
  responses: { 202: { description: 'accepted', content: json(AcceptedTurn) }, ...errors(400, 401, 403, 404, 409, 413, 415, 429, 503) },
});

/** Issue 30: the seed's entry point (RL-1's `POST /sessions/{id}/messages`): the same request and answer as `…/turns`. */
const postMessage = createRoute({
  ...start,
  path: '/sessions/{sessionId}/messages',
  summary: "Send a message: the seed's name for starting a turn, the same as `POST /sessions/{sessionId}/turns` (202 once durably stored, `clientRequestId` dedup)",
});

const get = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/turns/{turnId}',
  summary: 'Where a turn stands; `?wait=SECONDS` (at most 60) holds the request until it ends',
  request: { params: TurnParams, query: WaitQuery },
  responses: { 200: { description: 'the turn', content: json(TurnState) }, ...errors(400, 401, 404, 503) },
});

const cancel = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/turns/{turnId}/cancel',
  summary: 'Cancel the running turn (its model call and tool are aborted) or a queued one (it never starts)',
  request: { params: TurnParams },
  middleware: [takesNoBody],
  responses: { 200: { description: 'cancelled', content: json(Ok) }, ...errors(400, 401, 403, 404, 409, 415, 503) },
});

const decide = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/turns/{turnId}/permissions/{toolCallId}',
  summary: 'Answer a pending approval',
  request: { params: PermissionParams, body: { content: json(DecisionBody), required: true } },
  responses: { 200: { description: 'resolved', content: json(Ok) }, ...errors(400, 401, 403, 404, 409, 413, 415, 503) },
});

export function turnRoutes(app: OpenAPIHono, host: HostContext): void {
  // One handler for both names of the entry point: they may never answer differently.
  for (const route of [start, postMessage]) {
    app.openapi(route, async (c) => {
      const caller = callerOf(c);
      const body = c.req.valid('json');
      const session = await sessionOf(host, c.req.valid('param').sessionId, caller);
      // Issue 25: the caller's quotas of running turns and turns per minute (one read; none for an admin).
      const admitted = await host.limits.principals.admitTurn(caller, session.id, body.clientRequestId);
      // Issue 27: the caller's trace context goes with the command (routed to the owner if another host holds the session).
      const traceParent = traceParentFromHeader(c.req.valid('header').traceparent);
      try {
        const accepted = unwrap(await session.call('submitTurn', { ...body, trigger: 'message', ...(traceParent && { traceParent }) }));
        return c.json({ turnId: accepted.turnId, runId: accepted.runId, status: accepted.status }, 202);
      } finally {
        admitted();
      }
    });
  }

  app.openapi(get, async (c) => {
    const { sessionId, turnId } = c.req.valid('param');
    const session = await sessionOf(host, sessionId, callerOf(c));
    const waitS = c.req.valid('query').wait ?? 0;
    const state = unwrap(await session.turnState(turnId, waitS * 1000, c.req.raw.signal));
    return c.json(stateBody(state), 200);
  });

  app.openapi(cancel, async (c) => {
    const { sessionId, turnId } = c.req.valid('param');
    const session = await sessionOf(host, sessionId, callerOf(c));
    unwrap(await session.call('cancelTurn', turnId));
    return c.json({ ok: true as const }, 200);
  });

  app.openapi(decide, async (c) => {
    const { sessionId, turnId, toolCallId } = c.req.valid('param');
    const caller = callerOf(c);
    const session = await sessionOf(host, sessionId, caller);
    // The answer names who gave it (issue 25): the audit row records it.
    unwrap(await session.call('resolvePermission', { turnId, toolCallId, decision: c.req.valid('json').decision, principal: caller.principal }));
    return c.json({ ok: true as const }, 200);
  });
}

function stateBody(state: Extract<TurnStatusResult, { ok: true }>) {
  return { turnId: state.turnId, status: state.status, ...(state.outcome && { outcome: state.outcome }) };
}
