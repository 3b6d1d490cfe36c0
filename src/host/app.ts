import { OpenAPIHono } from '@hono/zod-openapi';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { HTTPException } from 'hono/http-exception';
import type { Context, MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { requireCaller, type Authentication } from './auth.js';
import { commandError, errorResponse } from './errors.js';
import { hostCheck, type HostNames } from './host-check.js';
import type { HostContext } from './host-context.js';
import { jsonOnly } from './media-type.js';
import { originCheck } from './origin-check.js';
import { agentRoutes } from './routes/agents.js';
import { auditRoutes } from './routes/audit.js';
import { eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { inspectDataRoutes } from './routes/inspect-data.js';
import { inspectPageRoutes, isInspectorPagePath } from './routes/inspect-page.js';
import { metricsRoutes } from './routes/metrics.js';
import { runRoutes } from './routes/runs.js';
import { sessionCommandRoutes } from './routes/session-commands.js';
import { sessionRoutes } from './routes/sessions.js';
import { taskRoutes } from './routes/tasks.js';
import { turnRoutes } from './routes/turns.js';
import { uiChatRoutes } from './routes/ui-chat.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export interface AppSecurity {
  /** Who a request comes from, asked of every route but `/healthz` and the inspector's page (issue 25). */
  auth: Authentication;
  /** The one origin CORS allows, and the one besides the host's own that may send commands; null leaves CORS off. */
  corsOrigin: string | null;
  /** What a request's Host header may name (DNS rebinding). */
  hosts: HostNames;
}

/**
 * The HTTP API (RL-1): routes translate HTTP to session commands and their results to status codes;
 * no session logic lives here. Every body and parameter is validated, every error is
 * `{ error: { code, message } }`, and the OpenAPI document is built from the same schemas.
 */
export function createApp(host: HostContext, security: AppSecurity): OpenAPIHono {
  const app = new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success) return commandError(c, { code: 'InvalidInput', message: z.prettifyError(result.error) });
    },
  });
  app.use('*', closeAfterUnreadBody);
  app.use('*', hostCheck(security.hosts));
  if (security.corsOrigin) app.use('*', cors({ origin: security.corsOrigin, allowHeaders: ['Authorization', 'Content-Type', 'Last-Event-ID'] }));
  app.use('*', requireCaller(security.auth, (path) => path === '/healthz' || isInspectorPagePath(path)));
  app.use('*', originCheck(security.corsOrigin));
  app.use('*', limitBody());
  healthRoutes(app, host, (c) => security.auth.holdsSharedToken(c.req.header('authorization')));
  agentRoutes(app, host);
  sessionRoutes(app, host);
  turnRoutes(app, host);
  runRoutes(app, host);
  sessionCommandRoutes(app, host);
  auditRoutes(app, host);
  eventRoutes(app, host);
  uiChatRoutes(app, host);
  inspectPageRoutes(app, host);
  inspectDataRoutes(app, host);
  if (host.tasks) taskRoutes(app, host.tasks);
  metricsRoutes(app, host);
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: { title: 'turnchart', version: '0.1.0', description: 'Agent sessions as a service: turns, approvals, live updates over SSE; tasks run by workers over RabbitMQ.' },
    ...(security.auth.required && { security: [{ bearer: [] }] }),
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  app.notFound((c) => commandError(c, { code: 'NotFound', message: `no route ${c.req.method} ${c.req.path}` }));
  app.onError((error, c) => {
    // @hono/zod-openapi's media-type gate: a body that is not JSON.
    if (error instanceof HTTPException && error.status === 415) return jsonOnly(c);
    if (error instanceof HTTPException && error.status < 500) {
      return commandError(c, { code: error.status === 413 ? 'PayloadTooLarge' : 'InvalidInput', message: error.message || 'malformed request' });
    }
    return errorResponse(c, error, host.warn);
  });
  return app;
}

/**
 * The body limit, judged from the headers whenever they settle it: a request with neither
 * `Content-Length` nor `Transfer-Encoding` has no body (RFC 9112 §6.3), and one with only
 * `Content-Length` is too large or not by that number. Only a chunked body is counted as it is read,
 * by Hono's `bodyLimit`. (Hono's middleware first looks at `c.req.raw.body`, which makes
 * @hono/node-server build a full `Request` with a web stream over the socket for every request, GETs
 * and event streams included: a third of a GET's round trip on loopback, 327 → 219 µs; bench/README.md.)
 */
function limitBody(): MiddlewareHandler {
  const tooLarge = (c: Context) => commandError(c, { code: 'PayloadTooLarge', message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` });
  const counting = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge });
  return async (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) return counting(c, next);
    const length = c.req.header('content-length');
    if (length === undefined) return next();
    return Number.parseInt(length, 10) > MAX_BODY_BYTES ? tooLarge(c) : next();
  };
}

/**
 * A response given without reading the request's body — an unknown route, a bad path, a refused
 * token, a body over the limit — closes the connection. Kept alive, the unread bytes are drained
 * or cut off behind the client's back, and the next request the client sends on that connection
 * fails ("other side closed").
 */
const closeAfterUnreadBody: MiddlewareHandler = async (c, next) => {
  await next();
  const sentBody = c.req.header('transfer-encoding') !== undefined || Number(c.req.header('content-length') ?? 0) > 0;
  if (sentBody && (!c.req.raw.bodyUsed || c.res.status === 413)) c.res.headers.set('Connection', 'close');
};
