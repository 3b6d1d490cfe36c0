import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { commandError } from './errors.js';

/** The host's bearer token, if it has one. */
export interface TokenCheck {
  required: boolean;
  /** Whether an `Authorization` header carries the token; never, when there is none. */
  accepts(authorization: string | undefined): boolean;
}

/**
 * Both sides are hashed first so the comparison takes the same time whatever the length or
 * content of the token offered.
 */
export function tokenCheck(token: string | null): TokenCheck {
  const expected = token === null ? null : digest(token);
  return {
    required: expected !== null,
    accepts(authorization) {
      if (expected === null) return false;
      const offered = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '';
      return timingSafeEqual(digest(offered), expected);
    },
  };
}

/** Bearer-token check for every route but those `open` lets through. */
export function bearerAuth(check: TokenCheck, open: (path: string) => boolean): MiddlewareHandler {
  return async (c, next) => {
    if (!check.required || open(c.req.path) || check.accepts(c.req.header('authorization'))) return next();
    c.header('WWW-Authenticate', 'Bearer');
    return commandError(c, { code: 'Unauthorized', message: 'a valid bearer token is required' });
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
