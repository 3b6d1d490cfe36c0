import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { callerOf } from '../auth.js';
import { sessionOf, unwrap, type HostContext } from '../host-context.js';
import { takesNoBody } from '../media-type.js';
import { AgentBody, AgentMessageBody, AgentSwitched, Compacted, errors, ModeBody, Ok, RewindBody, SessionParams } from '../schemas.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const mode = createRoute({
  method: 'put',
  path: '/sessions/{sessionId}/permission-mode',
  summary: 'Set the permission mode (from the next tool call on)',
  request: { params: SessionParams, body: { content: json(ModeBody), required: true } },
  responses: { 200: { description: 'stored', content: json(Ok) }, ...errors(400, 401, 403, 404, 409, 413, 415, 503) },
});

const agent = createRoute({
  method: 'put',
  path: '/sessions/{sessionId}/agent',
  summary: "Switch the session's agent from the next turn on (only to an agent the current one allows, only while no turn runs)",
  request: { params: SessionParams, body: { content: json(AgentBody), required: true } },
  responses: { 200: { description: 'switched', content: json(AgentSwitched) }, ...errors(400, 401, 403, 404, 409, 413, 415, 503) },
});

const agentMessage = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/agent-messages',
  summary: 'Deliver an agent message to the mailbox (drained before the next model call of a user turn)',
  request: { params: SessionParams, body: { content: json(AgentMessageBody), required: true } },
  responses: { 200: { description: 'enqueued', content: json(Ok) }, ...errors(400, 401, 403, 404, 409, 413, 415, 503) },
});

const compact = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/compact',
  summary: 'Compact the conversation into a checkpoint (only while no turn runs)',
  request: { params: SessionParams },
  middleware: [takesNoBody],
  responses: { 200: { description: 'compacted', content: json(Compacted) }, ...errors(400, 401, 403, 404, 409, 415, 503) },
});

const rewind = createRoute({
  method: 'post',
  path: '/sessions/{sessionId}/rewind',
  summary: 'Make an earlier checkpoint the active one again (only while no turn runs)',
  request: { params: SessionParams, body: { content: json(RewindBody), required: true } },
  responses: { 200: { description: 'rewound', content: json(Ok) }, ...errors(400, 401, 403, 404, 409, 413, 415, 503) },
});

export function sessionCommandRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(mode, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    unwrap(await session.call('setPermissionMode', c.req.valid('json').mode));
    return c.json({ ok: true as const }, 200);
  });

  app.openapi(agent, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    const switched = unwrap(await session.call('switchAgent', c.req.valid('json').agent));
    return c.json({ ok: true as const, agent: switched.agent }, 200);
  });

  app.openapi(agentMessage, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    unwrap(await session.call('deliverAgentMessage', c.req.valid('json')));
    return c.json({ ok: true as const }, 200);
  });

  app.openapi(compact, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    const { compactionId } = unwrap(await session.call('compactConversation', undefined));
    return c.json({ ok: true as const, compactionId }, 200);
  });

  app.openapi(rewind, async (c) => {
    const session = await sessionOf(host, c.req.valid('param').sessionId, callerOf(c));
    unwrap(await session.call('rewindConversation', c.req.valid('json').compactionId));
    return c.json({ ok: true as const }, 200);
  });
}
