import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { HostContext } from '../host-context.js';
import { Health } from '../schemas.js';

const route = createRoute({
  method: 'get',
  path: '/healthz',
  summary: 'Liveness and storage reachability',
  responses: {
    200: { description: 'the host and its database answer', content: { 'application/json': { schema: Health } } },
    503: { description: 'the database does not answer', content: { 'application/json': { schema: Health } } },
  },
});

/** `200 { ok: true }` while the database answers, `503` while it does not. */
export function healthRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(route, async (c) => {
    try {
      await host.storage.ping();
      host.storageDown = false;
      return c.json({ ok: true, openSessions: host.runtime.openSessionCount }, 200);
    } catch (error) {
      host.storageDown = true;
      return c.json({ ok: false, error: { code: 'StorageUnavailable', message: error instanceof Error ? error.message : String(error) } }, 503);
    }
  });
}
