import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { commandError } from '../errors.js';
import type { HostContext } from '../host-context.js';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/** Asset names as Vite writes them: no directories, no dot-files. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  // The page only talks to this host and runs only its own built scripts.
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * The inspector page and its built assets. They hold no session data, so they are served without
 * the token (a browser cannot put a header on a navigation); everything the page reads or does goes
 * through `/inspect/api/…` and the API, with the token as a bearer header.
 */
export function inspectPageRoutes(app: OpenAPIHono, host: HostContext): void {
  const dir = host.inspector.assets;
  app.get('/inspect', async (c) => {
    const html = await readFile(join(dir, 'index.html')).catch(() => null);
    if (!html) return commandError(c, { code: 'InspectorNotBuilt', message: `the inspector page is not built (no ${join(dir, 'index.html')}): run npm run build:visualizer` });
    return c.body(html, 200, PAGE_HEADERS);
  });
  app.get('/inspect/', (c) => c.redirect('/inspect', 301));
  app.get('/inspect/assets/:name', async (c) => {
    const name = c.req.param('name');
    if (!ASSET_NAME.test(name)) return commandError(c, { code: 'NotFound', message: 'no such asset' });
    const body = await readFile(join(dir, 'assets', name)).catch(() => null);
    if (!body) return commandError(c, { code: 'NotFound', message: 'no such asset' });
    return c.body(body, 200, {
      'content-type': TYPES[extname(name)] ?? 'application/octet-stream',
      // Vite names each asset by a hash of its content.
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
  });
}

/** Paths the bearer check lets through: the page and its assets. */
export function isInspectorPagePath(path: string): boolean {
  return path === '/inspect' || path === '/inspect/' || path.startsWith('/inspect/assets/');
}
