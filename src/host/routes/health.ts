import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { HostContext } from '../host-context.js';
import { errors, Health } from '../schemas.js';
import { messageOf } from '../../protocol/error-message.js';

const route = createRoute({
  method: 'get',
  path: '/healthz',
  summary: 'Liveness and storage reachability',
  description:
    'Open to anyone, so it says only `ok` (and on 503 the code `StorageUnavailable`). With the host\'s bearer token it also says ' +
    '`openSessions` and, on 503, what the database driver reported.',
  responses: {
    200: { description: 'the host and its database answer', content: { 'application/json': { schema: Health } } },
    503: { description: 'the database does not answer', content: { 'application/json': { schema: Health } } },
    ...errors(),
  },
});

/**
 * `200 { ok: true }` while the database answers, `503` while it does not. It needs no token (a
 * load balancer's probe has none), so without one it tells nothing about the host's load or its
 * database; a host without a token has no caller it could tell more.
 */
export function healthRoutes(app: OpenAPIHono, host: HostContext, authenticated: (c: Context) => boolean): void {
  app.openapi(route, async (c) => {
    const detailed = authenticated(c);
    try {
      await host.storage.ping();
      host.storageDown = false;
      return c.json({ ok: true, ...(detailed && { openSessions: host.runtime.openSessionCount }) }, 200);
    } catch (error) {
      host.storageDown = true;
      const message = detailed ? (messageOf(error)) : 'the database does not answer';
      return c.json({ ok: false, error: { code: 'StorageUnavailable', message } }, 503);
    }
  });
}
