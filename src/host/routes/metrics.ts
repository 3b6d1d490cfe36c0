import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { isAdmin } from '../../protocol/principal.js';
import { callerOf } from '../auth.js';
import { ApiError } from '../errors.js';
import type { HostContext } from '../host-context.js';
import { errors } from '../schemas.js';

const route = createRoute({
  method: 'get',
  path: '/metrics',
  summary: 'Prometheus metrics of this host',
  description:
    'The Prometheus text format: turns, model and tool calls, tokens, sessions, streams, the cluster, tasks, storage errors and ' +
    "Node's process metrics. Behind the token like every route; with JWTs, for admins only (403 `Forbidden` otherwise). " +
    '`--metrics-port` serves the same without a token on a listener of its own.',
  responses: {
    200: { description: 'the metrics', content: { 'text/plain': { schema: z.string() } } },
    403: { description: 'Forbidden: the caller is not an admin' },
    ...errors(401),
  },
});

/**
 * `GET /metrics` (issue 27). The metrics carry no session or user data, but they do tell every
 * user's load: a caller who sees only their own sessions gets 403. A host without authentication
 * (loopback) has only its operator, an admin.
 */
export function metricsRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(route, async (c) => {
    if (!isAdmin(callerOf(c))) throw new ApiError('Forbidden', 'the metrics are for admins');
    return c.body(await host.metrics.text(), 200, { 'content-type': host.metrics.contentType, 'cache-control': 'no-store' });
  });
}
