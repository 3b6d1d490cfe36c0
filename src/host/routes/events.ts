import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { callerOf } from '../auth.js';
import { sessionOf, type HostContext } from '../host-context.js';
import type { Caller } from '../../protocol/principal.js';
import type { UpdateFeed } from '../session-access.js';
import { errors, EventsQuery, SessionParams } from '../schemas.js';
import { resumePoint } from '../resume-point.js';
import { sessionEventStream } from '../sse-stream.js';
import { untilOwnerAnswers } from '../sse-takeover.js';

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
  responses: { 200: { description: 'text/event-stream' }, ...errors(400, 401, 404, 409, 429, 503) },
});

export function eventRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(route, async (c) => {
    const after = resumePoint(c.req.header('last-event-id'), c.req.valid('query').after);
    // Node's response, so a client that falls behind can be cut off at once (the Node adapter passes it as env).
    const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
    const caller = callerOf(c);
    const stream = await host.limits.streams.open(c.req.method, caller, async () => {
      const feed = await feedOf(host, c.req.valid('param').sessionId, caller, after, c.req.raw.signal);
      return sessionEventStream(feed, host.sse, outgoing && (() => outgoing.destroy()));
    });
    return new Response(stream, {
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

/** The feed the stream reads; a dead owner's session is waited for (`untilOwnerAnswers`). */
async function feedOf(host: HostContext, sessionId: string, caller: Caller, after: number | null, gone: AbortSignal): Promise<UpdateFeed> {
  return untilOwnerAnswers(async () => (await sessionOf(host, sessionId, caller)).updateFeed(after), gone);
}
