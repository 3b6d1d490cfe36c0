import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TurnchartMetrics } from './metrics.js';
import { hostMatcher } from '../util/host-header.js';

export interface MetricsListener {
  /** `http://host:port/metrics`. */
  url: string;
  close(): Promise<void>;
}

/**
 * `--metrics-port` (issue 27): a listener of its own that serves `GET /metrics` and nothing else,
 * without a token, for a scraper on a private network — the metrics name no session, user or
 * secret, and this port reaches nothing of the API. Anything else is 404; a scrape that fails is 500.
 * Like the API's port, it answers only a Host that names it (`allowedHosts`, and its own address):
 * else a page rebinding a name of its own to 127.0.0.1 could read the host's figures (421).
 */
export async function listenForMetrics(metrics: TurnchartMetrics, host: string, port: number, allowedHosts: readonly string[] = []): Promise<MetricsListener> {
  const serves = hostMatcher({ bound: host, allowed: allowedHosts });
  const server = createServer((request, response) => {
    if (!serves(request.headers.host, request.socket.localPort)) {
      response.writeHead(421, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('the Host header names no address or name of this host\n');
      return;
    }
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
