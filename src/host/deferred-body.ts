import { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';

/** A response body the host writes to Node's response itself, once the app has answered. */
export interface DeferredBody {
  /** The app's answer was the one the route gave: its status and headers are written, the body is this one's to write and end. */
  start(response: ServerResponse): void;
  /** The app answered something else (an error after the route): nothing of this body is written. */
  cancel(): void;
}

const deferred = new WeakMap<ServerResponse, DeferredBody>();

/**
 * From a route: the body of the answer it returns (status 200, no body of its own) is `body`,
 * written straight to `response` — the Node adapter's `env.outgoing` — instead of through a web
 * stream and the adapter's read loop (issue 28). The headers are the app's final answer's, so
 * what middleware adds after the route (CORS, `Vary`, `Connection: close`) is written as for any
 * other answer.
 */
export function deferBody(response: ServerResponse, body: DeferredBody): void {
  deferred.set(response, body);
}

/**
 * In the host's listener, with the app's answer to a request and the adapter's `env.outgoing`: a
 * deferred body starts once the answer's status and headers are written, and the adapter is told
 * the response is sent; any other answer goes to the adapter as it is. The adapter's
 * `RESPONSE_ALREADY_SENT` is returned here rather than by the route: Hono makes a new response of
 * what a route returns once middleware has touched `c.res` (CORS does), and the adapter writes that
 * one's headers again.
 */
export function answerWithDeferred(answer: Response, response: unknown): Response {
  if (!(response instanceof ServerResponse)) return answer;
  const body = deferred.get(response);
  if (!body) return answer;
  deferred.delete(response);
  if (answer.status !== 200 || response.headersSent) {
    body.cancel();
    return answer;
  }
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of answer.headers) headers[name] = value;
  const cookies = answer.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  response.writeHead(answer.status, headers);
  body.start(response);
  return RESPONSE_ALREADY_SENT;
}
