import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { sessionOf, type HostContext } from '../host-context.js';
import { errors, EventsQuery, SessionParams } from '../schemas.js';
import { sessionEventStream } from '../sse-stream.js';

const route = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/events',
  summary: 'The session\'s updates as Server-Sent Events, resumable with Last-Event-ID or ?after=N',
  description:
    'Each update envelope is one event: `id:` its sequence, `data:` the envelope JSON. A new client first gets `event: snapshot`; ' +
    'a resuming client gets what it missed, or `event: snapshot_required` with the snapshot when that range is gone (older than the ' +
    'replay ring, or from before the host opened the session). A comment heartbeat every 15 s. Disconnecting never cancels the run; ' +
    'a client that falls too far behind is disconnected and resumes with its last id.',
  request: { params: SessionParams, query: EventsQuery },
  responses: { 200: { description: 'text/event-stream' }, ...errors(400, 401, 404, 409, 503) },
});

export function eventRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(route, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId);
    const after = resumePoint(c.req.header('last-event-id'), c.req.valid('query').after);
    // Node's response, so a client that falls behind can be cut off at once (the Node adapter passes it as env).
    const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
    return new Response(sessionEventStream(session, after, host.sse, outgoing && (() => outgoing.destroy())), {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'transfer-encoding': 'chunked',
        'x-accel-buffering': 'no',
      },
    });
  });
}

/** `Last-Event-ID` wins over `?after`; anything that is not a sequence number counts as no resume point. */
function resumePoint(lastEventId: string | undefined, after: number | undefined): number | null {
  if (lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId.trim())) return Number(lastEventId.trim());
  return after ?? null;
}
