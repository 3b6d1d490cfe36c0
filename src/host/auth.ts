import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { commandError } from './errors.js';

/**
 * Bearer-token check for every route but the health check. Both sides are hashed first so the
 * comparison takes the same time whatever the length or content of the token offered.
 */
export function bearerAuth(token: string | null, open: (path: string) => boolean): MiddlewareHandler {
  const expected = token === null ? null : digest(token);
  return async (c, next) => {
    if (expected === null || open(c.req.path)) return next();
    const header = c.req.header('authorization') ?? '';
    const offered = /^Bearer (.+)$/i.exec(header)?.[1] ?? '';
    if (!timingSafeEqual(digest(offered), expected)) {
      c.header('WWW-Authenticate', 'Bearer');
      return commandError(c, { code: 'Unauthorized', message: 'a valid bearer token is required' });
    }
    return next();
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
