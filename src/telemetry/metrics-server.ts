import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TurnchartMetrics } from './metrics.js';

export interface MetricsListener {
  /** `http://host:port/metrics`. */
  url: string;
  close(): Promise<void>;
}

/**
 * `--metrics-port` (issue 27): a listener of its own that serves `GET /metrics` and nothing else,
 * without a token, for a scraper on a private network — the metrics name no session, user or
 * secret, and this port reaches nothing of the API. Anything else is 404; a scrape that fails is 500.
 */
export async function listenForMetrics(metrics: TurnchartMetrics, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('only GET /metrics is served here\n');
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('the metrics could not be read\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${hostPart}:${bound}/metrics`, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // A scraper's keep-alive connection would hold the close for as long as it stays.
    server.closeAllConnections();
  });
}
