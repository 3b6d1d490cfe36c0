import { request } from 'node:http';
import { connect } from 'node:net';

/** A request as it goes on the wire: `fetch` cannot send a `Host` of its choosing, this can. */
export interface RawRequest {
  method: string;
  path: string;
  /** Sent as given, `Host` included (without one, Node sends the URL's). */
  headers?: Record<string, string>;
  body?: string;
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The error code of a `{ error: { code } }` body, if it is one. */
  code: string | null;
}

/**
 * Sends one request over a connection of its own and reads the whole answer; an event stream is
 * not read (its status and headers are answered, then the connection is closed).
 */
export function rawRequest(base: string, req: RawRequest): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port, method: req.method, path: req.path, headers: req.headers ?? {}, agent: false },
      (response) => {
        const done = (text: string) => resolve({ status: response.statusCode!, headers: response.headers, text, code: codeOf(text) });
        if (String(response.headers['content-type']).startsWith('text/event-stream')) {
          response.destroy();
          return done('');
        }
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => done(text));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

/** Writes `head` (a request line and header lines, no blank line) as it is and reads the answer to the end. */
export function rawWire(base: string, head: string): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname.replace(/^\[|\]$/g, ''));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [headText = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = headText.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text: body, code: codeOf(body) });
    });
    socket.end(`${head}\r\nConnection: close\r\n\r\n`);
  });
}

function codeOf(text: string): string | null {
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}
