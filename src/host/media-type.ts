import type { Context, MiddlewareHandler } from 'hono';
import { commandError } from './errors.js';

/**
 * What a route takes as its body, enforced as `415 UnsupportedMediaType` (issue 22, finding 1).
 * A route with a body takes `application/json` only (@hono/zod-openapi's media-type gate refuses
 * anything else, and the app's error handler answers with `jsonOnly`): a browser sends a
 * `text/plain`, form or multipart body across origins without a CORS preflight, JSON never.
 */
export function jsonOnly(c: Context): Response {
  return commandError(c, { code: 'UnsupportedMediaType', message: 'this route takes a JSON body, sent as Content-Type: application/json' });
}

/**
 * A command without a body (`/cancel`, `/compact`, a task's `/pause` …) takes none at all, and
 * refuses one before anything runs. An empty body is no body, whatever its `Content-Type`; a
 * chunked one is read (within the body limit) to know.
 */
export const takesNoBody: MiddlewareHandler = async (c, next) => {
  const chunked = c.req.header('transfer-encoding') !== undefined;
  const bytes = chunked ? (await c.req.arrayBuffer()).byteLength : Number(c.req.header('content-length') ?? 0);
  if (bytes === 0) return next();
  return commandError(c, { code: 'UnsupportedMediaType', message: 'this route takes no body' });
};
