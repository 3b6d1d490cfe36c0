import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { z } from 'zod';
import { chartLayouts } from '../../inspect/chart-layout.js';
import type { WatchListener } from '../../inspect/session-watch.js';
import { commandError, viaStorage } from '../errors.js';
import { callerOf } from '../auth.js';
import { localHandleFor, storedSessionOf, type HostContext } from '../host-context.js';
import { SessionParams } from '../schemas.js';
import { resumePoint } from '../resume-point.js';
import { SSE_HEADERS, sseBody, sseFrame } from '../sse-writer.js';

const AfterQuery = z.object({ after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional() }).strict();

/**
 * The inspector page's data, behind the API's bearer token: the charts laid out, the session list
 * with live status, and each watched session's merged stream. Not part of `/openapi.json`: they
 * serve the page, not API clients, and their shapes are `src/inspect/stream-protocol.ts`.
 */
export function inspectDataRoutes(app: OpenAPIHono, host: HostContext): void {
  app.get('/inspect/api/charts', async (c) => c.json({ charts: await chartLayouts() }, 200, { 'cache-control': 'no-cache' }));

  app.get('/inspect/api/sessions', async (c) => {
    // Changes that arrive before the stream starts are held and sent after the list.
    const early: string[] = [];
    let write = (text: string): void => void early.push(text);
    const listener = { caller: callerOf(c), entry: (entry: unknown) => write(sseFrame(JSON.stringify(entry))) };
    const body = await host.limits.streams.open(c.req.method, listener.caller, async () => {
      const entries = await viaStorage(() => host.inspector.list.listen(listener));
      return sseBody(host.sse, disconnectOf(c), (sink) => {
        sink.write(sseFrame(JSON.stringify({ sessions: entries }), 'list'));
        for (const text of early) sink.write(text);
        write = (text) => sink.write(text);
        return () => host.inspector.list.unlisten(listener);
      });
    });
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  });

  // Sub-agents: the session that spawned this one and the ones it spawned, so the page can link them.
  app.get('/inspect/api/sessions/:sessionId/links', async (c) => {
    const params = SessionParams.safeParse(c.req.param());
    if (!params.success) return commandError(c, { code: 'InvalidInput', message: 'expected a session id' });
    await storedSessionOf(host, params.data.sessionId, callerOf(c));
    const links = await viaStorage(() => host.runtime.agentLinks(params.data.sessionId));
    return c.json(
      {
        // Sub-agents belong to their parent's owner, so what a caller may see of one it may see of the others.
        parent: links.parent ? { sessionId: links.parent.sessionId } : null,
        children: links.children.map((child) => ({ sessionId: child.sessionId, agent: child.agent })),
      },
      200,
      { 'cache-control': 'no-cache' },
    );
  });

  app.get('/inspect/api/sessions/:sessionId/stream', async (c) => {
    const params = SessionParams.safeParse(c.req.param());
    const query = AfterQuery.safeParse(c.req.query());
    if (!params.success || !query.success) return commandError(c, { code: 'InvalidInput', message: 'expected a session id and an optional ?after=N' });
    const after = resumePoint(c.req.header('last-event-id'), query.data.after);
    const caller = callerOf(c);
    const body = await host.limits.streams.open(c.req.method, caller, async () => {
      const watch = host.inspector.hub.watch(await localHandleFor(host, params.data.sessionId, caller));
      return sseBody(host.sse, disconnectOf(c), (sink) => {
        const listener: WatchListener = { item: (sent) => sink.write(sseFrame(sent.json, undefined, sent.cursor)), end: () => sink.close() };
        const { hello, replay } = watch.listen(listener, after);
        sink.write(sseFrame(JSON.stringify(hello), 'hello', hello.cursor));
        for (const sent of replay) sink.write(sseFrame(sent.json, undefined, sent.cursor));
        return () => watch.unlisten(listener);
      });
    });
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  });
}

/** Node's response, so a client that falls behind can be cut off at once. */
function disconnectOf(c: Context): (() => void) | undefined {
  const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
  return outgoing && (() => outgoing.destroy());
}
