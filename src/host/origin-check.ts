import type { MiddlewareHandler } from 'hono';
import { commandError } from './errors.js';

/** The methods that only read: CORS governs what a page of another origin may read of their answers. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery (issue 22, finding 1): a browser sends a page's `Origin` with every
 * request that may change something, and a form or a "simple" `fetch` from any page reaches this
 * host without a CORS preflight. So a request that is not a read and carries an `Origin` is served
 * only from this host's own origin — the scheme (`http`, or `https` through a TLS proxy in front)
 * and exactly the authority of the `Host` header, which `hostCheck` has already accepted — or from
 * the one `--cors-origin`. `Origin: null` (a sandboxed frame, a redirect across sites, a `file:`
 * page) is refused like any other. A request without an `Origin` is not a browser's and passes:
 * a client that is not a browser sends what it likes anyway, and the bearer token is its check.
 */
export function originCheck(corsOrigin: string | null): MiddlewareHandler {
  const allowed = corsOrigin === null ? null : originOf(corsOrigin);
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (origin === undefined || SAFE_METHODS.has(c.req.method)) return next();
    if ((allowed !== null && origin === allowed) || isOwnOrigin(origin, c.req.header('host'))) return next();
    return commandError(c, { code: 'ForbiddenOrigin', message: `requests that change something are not accepted from origin '${origin.slice(0, 200)}'` });
  };
}

function isOwnOrigin(origin: string, host: string | undefined): boolean {
  const url = parse(origin);
  if (!url || host === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) return false;
  // Under the origin's scheme, so that `https://name` and `Host: name:443` are the one authority.
  return parse(`${url.protocol}//${host}`)?.host === url.host;
}

/** An origin as a browser serializes it (`https://app.example`, no path, no default port), or the text as it is. */
function originOf(text: string): string {
  const url = parse(text);
  return url && url.origin !== 'null' ? url.origin : text;
}

function parse(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}
