import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { SessionRow } from '../../../storage/session-storage.js';
import { ApiError, viaStorage } from '../errors.js';
import { callerOf } from '../auth.js';
import { workspaceFor } from '../../tools/workspace/user-directory.js';
import { sessionOf, storedSessionOf, type HostContext } from '../host-context.js';
import { isAdmin } from '../../protocol/principal.js';
import {
  ContextWindow,
  CreatedSession,
  CreateSessionBody,
  errors,
  MessagePage,
  MessagesQuery,
  PageQuery,
  SessionList,
  SessionParams,
  SnapshotSchema,
} from '../schemas.js';
import { decodeCursor, encodeCursor } from '../cursor.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const create = createRoute({
  method: 'post',
  path: '/sessions',
  summary: 'Create a session in the host workspace',
  request: { body: { content: json(CreateSessionBody), required: false } },
  responses: { 201: { description: 'created', content: json(CreatedSession) }, ...errors(400, 401, 403, 413, 415, 429, 503) },
});

const list = createRoute({
  method: 'get',
  path: '/sessions',
  summary: 'Sessions, newest first, each with its live status',
  request: { query: PageQuery },
  responses: { 200: { description: 'a page of sessions', content: json(SessionList) }, ...errors(400, 401, 503) },
});

const get = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}',
  summary: 'The session snapshot (reopened from storage if it was closed)',
  request: { params: SessionParams },
  responses: { 200: { description: 'the snapshot', content: json(SnapshotSchema) }, ...errors(400, 401, 404, 409, 429, 503) },
});

const messages = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/messages',
  summary: 'The stored conversation, paged by sequence',
  request: { params: SessionParams, query: MessagesQuery },
  responses: { 200: { description: 'a page of messages', content: json(MessagePage) }, ...errors(400, 401, 404, 503) },
});

const context = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/context',
  summary: 'The context window as the next model call would see it (inspectContextWindow)',
  request: { params: SessionParams },
  responses: { 200: { description: 'the preview', content: json(ContextWindow) }, ...errors(400, 401, 404, 409, 429, 503) },
});

export function sessionRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(create, async (c) => {
    const body = c.req.valid('json');
    host.agents.check(body.agent);
    const caller = callerOf(c);
    const workspaceDir = await workspaceFor(host.workspaceDir, caller.principal, isAdmin(caller));
    const session = await host.limits.sessions.create(caller, { permissionMode: host.defaultPermissionMode, ...body, workspaceDir });
    return c.json({ sessionId: session.id, snapshot: session.snapshot() }, 201);
  });

  app.openapi(list, async (c) => {
    const { limit, cursor } = c.req.valid('query');
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    if (before === null) throw new ApiError('InvalidCursor', 'the cursor is not one this host gave out');
    const caller = callerOf(c);
    // An admin lists every principal's sessions; anyone else only their own.
    const rows = await viaStorage(() => host.storage.listSessions({ limit, ...(before && { before }), ...(!isAdmin(caller) && { principal: caller.principal }) }));
    const last = rows.at(-1);
    return c.json({ sessions: rows.map((row) => summary(host, row)), nextCursor: rows.length === limit && last ? encodeCursor(last) : null }, 200);
  });

  app.openapi(get, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    return c.json(await session.snapshot(), 200);
  });

  app.openapi(messages, async (c) => {
    const { sessionId } = c.req.valid('param');
    const { after, limit } = c.req.valid('query');
    await storedSessionOf(host, sessionId, callerOf(c));
    const page = await viaStorage(() => host.storage.listMessages(sessionId, { afterSequence: after ?? -1, limit }));
    const nextAfter = page.length === limit ? page.at(-1)!.sequence : null;
    return c.json({ messages: page.map(({ id, turnId, sequence, createdAtMs, message }) => ({ id, turnId, sequence, createdAtMs, message })), nextAfter }, 200);
  });

  app.openapi(context, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    const preview = await session.contextWindow();
    return c.json(preview as unknown as { budget: Record<string, unknown> }, 200);
  });
}

/** A stored session with what this host knows of it live: the running turn's phase, or the last outcome. */
function summary(host: HostContext, row: SessionRow) {
  const view = host.runtime.openHandle(row.id)?.snapshot().runtime;
  const status = view?.kind === 'running' ? view.phase : 'idle';
  return {
    sessionId: row.id,
    agent: row.agent,
    principal: row.principal ?? null,
    permissionMode: row.permissionMode,
    busyPolicy: row.busyPolicy ?? 'reject',
    createdAtMs: row.createdAtMs,
    status,
    lastOutcome: view?.kind === 'terminal' ? view.outcome.status : null,
  };
}
