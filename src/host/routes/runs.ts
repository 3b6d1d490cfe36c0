import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { RunRow } from '../../../storage/session-storage.js';
import type { Caller } from '../../protocol/principal.js';
import { runHasEnded } from '../../protocol/run-status.js';
import { callerOf } from '../auth.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { ApiError, viaStorage } from '../errors.js';
import { openSessionOf, sessionOf, storedSessionOf, type HostContext } from '../host-context.js';
import { runBody, visibleRun } from '../run-access.js';
import { runEventStream, runResumePoint } from '../run-event-stream.js';
import { RunList, RunParams, RunSchema } from '../run-schemas.js';
import { errors, EventsQuery, PageQuery, SessionParams } from '../schemas.js';
import type { SessionAccess } from '../session-access.js';
import { untilOwnerAnswers } from '../sse-takeover.js';
import { SSE_HEADERS } from '../sse-writer.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const list = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/runs',
  summary: "The session's runs (one per turn), newest first, paged by `cursor`",
  request: { params: SessionParams, query: PageQuery },
  responses: { 200: { description: 'a page of runs', content: json(RunList) }, ...errors(400, 401, 404, 503) },
});

const get = createRoute({
  method: 'get',
  path: '/runs/{runId}',
  summary: 'A run: its turn, trigger and status in the seed\'s words (`waiting_tool` while its tool calls run or wait for approval)',
  request: { params: RunParams },
  responses: { 200: { description: 'the run', content: json(RunSchema) }, ...errors(400, 401, 404, 503) },
});

const events = createRoute({
  method: 'get',
  path: '/runs/{runId}/events',
  summary: "The run's events as Server-Sent Events in the seed's names (run.started, message.delta, tool.*, agent.*, run.*), resumable with Last-Event-ID or ?after=N",
  description:
    "Mapped from the session's updates by one table (the README's \"Run events\"): `event:` the name, `id:` the session update's sequence, " +
    '`data:` JSON with `runId`, `sessionId`, `turnId` and the update\'s fields. The stream ends after the run\'s end event; a client that ' +
    'comes back after it is answered 204. What the replay ring no longer holds is told from the snapshot and storage: `run.started`, and the end.',
  request: { params: RunParams, query: EventsQuery },
  responses: { 200: { description: 'text/event-stream' }, 204: { description: 'the run ended and the client was given its end' }, ...errors(400, 401, 404, 409, 429, 503) },
});

export function runRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(list, async (c) => {
    const { sessionId } = c.req.valid('param');
    const { limit, cursor } = c.req.valid('query');
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    if (before === null) throw new ApiError('InvalidCursor', 'the cursor is not one this host gave out');
    const caller = callerOf(c);
    await storedSessionOf(host, sessionId, caller);
    const rows = await viaStorage(() => host.storage.listRuns(sessionId, { limit, ...(before && { before }) }));
    const last = rows.at(-1);
    const runs = await Promise.all(rows.map((row) => runBody(host, row, caller)));
    return c.json({ runs, nextCursor: rows.length === limit && last ? encodeCursor({ createdAtMs: last.runCreatedAtMs, id: last.runId }) : null }, 200);
  });

  app.openapi(get, async (c) => {
    const caller = callerOf(c);
    const run = await visibleRun(host, c.req.valid('param').runId, caller);
    return c.json(await runBody(host, run, caller), 200);
  });

  app.openapi(events, async (c) => {
    const { runId } = c.req.valid('param');
    const caller = callerOf(c);
    const { after, hadEnd } = runResumePoint(c.req.header('last-event-id'), c.req.valid('query').after);
    const run = await visibleRun(host, runId, caller);
    // Node's response, so a client that falls behind can be cut off at once (as the session stream does).
    const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
    let ended = false;
    const stream = await host.limits.streams.open(c.req.method, caller, async () => {
      const session = await sessionFor(host, run, caller, c.req.raw.signal);
      const source = {
        run,
        feed: (await session?.updateFeed(after ?? 0)) ?? null,
        after,
        hadEnd,
        reread: () => reread(host, runId, session),
        issuedUpTo: async () => (await viaStorage(() => host.storage.getSession(run.sessionId)))?.updateSequence ?? 0,
      };
      const body = await runEventStream(source, host.sse, outgoing && (() => outgoing.destroy()));
      ended = body === null;
      return body ?? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
    });
    if (ended) {
      await stream.cancel();
      return c.body(null, 204);
    }
    return new Response(stream, { status: 200, headers: SSE_HEADERS });
  });
}

/**
 * The session whose updates the stream reads. A run that ended is not worth opening a session for:
 * it is followed only where its session is open (null: open nowhere).
 */
async function sessionFor(host: HostContext, run: RunRow, caller: Caller, gone: AbortSignal): Promise<SessionAccess | null> {
  if (runHasEnded(run.status)) return openSessionOf(host, run.sessionId, caller);
  return untilOwnerAnswers(() => sessionOf(host, run.sessionId, caller), gone);
}

/**
 * The run as it stands now. A queued run's cancel is settled in its session before its row says so
 * (the write follows), so while the row still says queued the session is asked.
 */
async function reread(host: HostContext, runId: string, session: SessionAccess | null): Promise<RunRow | undefined> {
  const stored = await viaStorage(() => host.storage.getRun(runId));
  if (!stored || runHasEnded(stored.status) || !session) return stored;
  const state = await session.turnState(stored.id, 0);
  return state.ok && runHasEnded(state.status) ? { ...stored, status: state.status } : stored;
}
