import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { callerOf } from '../auth.js';
import { storedSessionOf, type HostContext } from '../host-context.js';
import { AuditLogSchema, AuditQuery, errors, SessionParams } from '../schemas.js';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const audit = createRoute({
  method: 'get',
  path: '/sessions/{sessionId}/audit',
  summary: 'The tool dispatch audit (RL-4), newest first; `before` = the previous page\'s `nextBefore`',
  request: { params: SessionParams, query: AuditQuery },
  responses: { 200: { description: 'a page of audit rows', content: json(AuditLogSchema) }, ...errors(400, 401, 404, 503) },
});

/** Reads storage only: a closed session is not reopened to show its audit. */
export function auditRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(audit, async (c) => {
    const { sessionId } = c.req.valid('param');
    const { limit, before } = c.req.valid('query');
    await storedSessionOf(host, sessionId, callerOf(c));
    const log = await host.runtime.auditLog(sessionId, { limit, ...(before !== undefined && { before }) });
    return c.json(log, 200);
  });
}
