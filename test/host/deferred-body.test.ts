import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { answerWithDeferred, deferBody } from '../../src/host/deferred-body.js';

/** A loopback server whose requests are answered by `handle` with Node's own response. */
async function serverWith(handle: (response: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer((_request, response) => handle(response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}

describe('a body written straight to Node’s response once the app has answered', () => {
  let server: Server | undefined;
  afterEach(async () => {
    const open = server;
    server = undefined;
    if (!open) return;
    open.closeAllConnections();
    await new Promise((resolve) => open.close(resolve));
  });

  it('writes the final answer’s status and headers, then hands the response to the body', async () => {
    const told: unknown[] = [];
    const opened = await serverWith((response) => {
      deferBody(response, { start: (started) => started.end('the body'), cancel: () => told.push('cancelled') });
      const answer = new Response(null, { status: 200, headers: { 'content-type': 'text/event-stream', vary: 'Origin', 'set-cookie': 'a=1' } });
      answer.headers.append('set-cookie', 'b=2');
      // The adapter is told the response is sent, so it writes nothing of its own.
      told.push(answerWithDeferred(answer, response).headers.get('x-hono-already-sent'));
    });
    server = opened.server;
    const res = await fetch(opened.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.text()).toBe('the body');
    expect(told).toEqual(['true']);
  });

  it('cancels the body when the app answered something else, which goes out as it is', async () => {
    const told: unknown[] = [];
    const opened = await serverWith((response) => {
      deferBody(response, { start: () => told.push('started'), cancel: () => told.push('cancelled') });
      const other = Response.json({ error: { code: 'InternalError' } }, { status: 500 });
      told.push(answerWithDeferred(other, response) === other);
      response.writeHead(500).end();
    });
    server = opened.server;
    const res = await fetch(opened.url);
    expect(res.status).toBe(500);
    await res.text();
    expect(told).toEqual(['cancelled', true]);
  });

  it('leaves every other answer alone', () => {
    const answer = new Response('plain');
    expect(answerWithDeferred(answer, undefined)).toBe(answer);
    expect(answerWithDeferred(answer, {})).toBe(answer);
  });
});
