import { ServerResponse } from 'node:http';
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { callerOf } from '../auth.js';
import { sessionOf, type HostContext } from '../host-context.js';
import type { Caller } from '../../protocol/principal.js';
import type { UpdateFeed } from '../session-access.js';
import { errors, EventsQuery, SessionParams } from '../schemas.js';
import { resumePoint } from '../resume-point.js';
import { sessionEventStream, writeSessionEvents } from '../sse-stream.js';
import { SSE_HEADERS } from '../sse-writer.js';
import { deferBody } from '../deferred-body.js';
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
    // Node's response (the Node adapter passes it as env): written to directly, and a client that falls behind is cut off at once.
    const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
    const caller = callerOf(c);
    const sessionId = c.req.valid('param').sessionId;
    if (outgoing instanceof ServerResponse && c.req.method === 'GET') {
      const release = await host.limits.streams.claim(caller);
      let feed: UpdateFeed;
      try {
        feed = await feedOf(host, sessionId, caller, after, c.req.raw.signal);
      } catch (error) {
        release();
        throw error;
      }
      deferBody(outgoing, {
        start: (response) => writeSessionEvents(response, feed, host.sse, release),
        cancel: () => {
          // The feed holds its subscription until it is taken: taken and dropped at once.
          feed.subscribe({ update: () => undefined, end: () => undefined })();
          release();
        },
      });
      return new Response(null, { status: 200, headers: SSE_HEADERS });
    }
    const stream = await host.limits.streams.open(c.req.method, caller, async () => {
      const feed = await feedOf(host, sessionId, caller, after, c.req.raw.signal);
      return sessionEventStream(feed, host.sse, outgoing instanceof ServerResponse ? () => outgoing.destroy() : undefined);
    });
    return new Response(stream, { status: 200, headers: SSE_HEADERS });
  });
}

/** The feed the stream reads; a dead owner's session is waited for (`untilOwnerAnswers`). */
async function feedOf(host: HostContext, sessionId: string, caller: Caller, after: number | null, gone: AbortSignal): Promise<UpdateFeed> {
  return untilOwnerAnswers(async () => (await sessionOf(host, sessionId, caller)).updateFeed(after), gone);
}
