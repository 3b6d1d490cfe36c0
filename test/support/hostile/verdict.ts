import type { HttpAnswer } from './http-request.js';

/** The only 5xx the service may answer with, and only while its storage is failing. */
export const STORAGE_CODES: readonly string[] = ['StorageUnavailable', 'PersistenceError'];

const STACK_TRACE = /\bat .*\.(ts|js|mjs|cjs):\d+|node:internal|\n\s+at /;

/**
 * What every answer to a hostile request must be: a success, or JSON `{ error: { code, message } }`
 * with a 4xx status — a 503 with a storage code only when `storageMayFail` — and never a stack trace.
 * Returns the reason it is not, or null.
 */
export function untypedAnswer(answer: HttpAnswer, storageMayFail = false): string | null {
  if (STACK_TRACE.test(answer.text)) return 'a stack trace in the body';
  if (answer.status === 204) return answer.text === '' ? null : 'a 204 with a body';
  if (answer.status >= 200 && answer.status < 300) {
    if (answer.contentType.startsWith('text/event-stream')) return badStream(answer);
    // `GET /metrics` (issue 27): Prometheus's text format, not JSON.
    if (answer.contentType.startsWith('text/plain; version=0.0.4')) return badExposition(answer.text);
    return badJson(answer.text);
  }
  if (!answer.contentType.startsWith('application/json')) return `status ${answer.status} with content type '${answer.contentType}'`;
  const error = errorOf(answer.text);
  if (!error) return `status ${answer.status} without { error: { code, message } }`;
  if (answer.status >= 400 && answer.status < 500) return null;
  if (answer.status === 503 && storageMayFail && STORAGE_CODES.includes(error.code)) return null;
  return `status ${answer.status} (${error.code})`;
}

function errorOf(text: string): { code: string; message: string } | null {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    const { code, message } = body.error ?? {};
    return typeof code === 'string' && code !== '' && typeof message === 'string' ? { code, message } : null;
  } catch {
    return null;
  }
}

function badJson(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch {
    return 'a success whose body is not JSON';
  }
}

/** Every line a comment or `name{labels} value`: the Prometheus text exposition format. */
function badExposition(text: string): string | null {
  const sample = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? \S+$/;
  const bad = text.split('\n').find((line) => line !== '' && !line.startsWith('#') && !sample.test(line));
  return bad === undefined ? null : `a metrics line that is not the text format: '${bad.slice(0, 80)}'`;
}

function badStream(answer: HttpAnswer): string | null {
  if (answer.uiMessageStream) return uiStreamStart(answer.text);
  if (!answer.text.startsWith('retry: ')) return 'an event stream that does not start with its retry field';
  return null;
}

/** The AI SDK's UI message stream (`/api/chat`): comments, then `data:` blocks of JSON chunks. */
function uiStreamStart(text: string): string | null {
  const blocks = text.split('\n\n').slice(0, -1);
  if (blocks.length === 0) return 'a UI message stream without one whole block';
  for (const block of blocks) {
    if (block.startsWith(':')) continue;
    if (!block.startsWith('data: ')) return 'a UI message stream block that is neither a comment nor data';
    const data = block.slice('data: '.length);
    if (data !== '[DONE]' && badJson(data)) return 'a UI message stream chunk that is not JSON';
  }
  return null;
}

/** The error code of an answer, if it has one. */
export function codeOf(answer: HttpAnswer): string | null {
  return errorOf(answer.text)?.code ?? null;
}
