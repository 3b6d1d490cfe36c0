import type { JsonSchema } from './json-schema.js';

/** One route of the OpenAPI document, as the generators need it. */
export interface Operation {
  method: string;
  /** `/sessions/{sessionId}/turns/{turnId}` */
  template: string;
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
}

interface OpenApiParameter {
  in: string;
  name: string;
  schema: JsonSchema;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: OpenApiParameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
  components: { schemas: Record<string, JsonSchema> };
}

/** Every operation the host lists in `/openapi.json`. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      template,
      pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      query: (op.parameters ?? []).filter((p) => p.in === 'query').map(({ name, schema }) => ({ name, schema })),
      body: op.requestBody?.content['application/json']?.schema ?? null,
    })),
  );
}

export const label = (op: Operation) => `${op.method} ${op.template}`;

/** What goes on the wire: the path is already percent-encoded, as hostile as it likes. */
export interface HttpRequest {
  method: string;
  path: string;
  /** Sent in order with `Headers.append`, so a name given twice is sent twice (fetch joins them). */
  headers: [string, string][];
  /** Text (UTF-8), raw bytes (no content type is added), or bytes sent as a chunked stream (no length). */
  body?: { text: string } | { bytes: Uint8Array; streamed: boolean };
}

export interface HttpAnswer {
  status: number;
  contentType: string;
  /** The JSON text, or for an event stream the blocks read up to the first event. */
  text: string;
  /** For an event stream: the first event's name (`message` for an update), or null if only fields without data came. */
  firstEvent?: string | null;
  /** The AI SDK's UI message stream (`x-vercel-ai-ui-message-stream`), not the session event stream. */
  uiMessageStream?: boolean;
}

/**
 * Sends a request over real HTTP. An event stream is read up to its first event when `eventDue`,
 * else only up to its first block; then the connection is closed.
 */
export async function send(base: string, request: HttpRequest, eventDue = false): Promise<HttpAnswer> {
  const controller = new AbortController();
  const headers = new Headers();
  for (const [name, value] of request.headers) headers.append(name, value);
  const response = await fetch(base + request.path, { method: request.method, headers, signal: controller.signal, ...bodyInit(request.body) });
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.startsWith('text/event-stream')) return { status: response.status, contentType, text: await response.text() };
  try {
    const { text, event } = await firstEvent(response.body!, eventDue);
    return { status: response.status, contentType, text, firstEvent: event, uiMessageStream: response.headers.has('x-vercel-ai-ui-message-stream') };
  } finally {
    controller.abort();
  }
}

function bodyInit(body: HttpRequest['body']): RequestInit {
  if (!body) return {};
  if ('text' in body) return { body: body.text };
  if (!body.streamed) return { body: body.bytes };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < body.bytes.length; at += 64 * 1024) controller.enqueue(body.bytes.subarray(at, at + 64 * 1024));
      controller.close();
    },
  });
  return { body: stream, duplex: 'half' } as RequestInit;
}

/** Reads blocks until one carries data (an event), or just the first block when no event is due. */
async function firstEvent(body: ReadableStream<Uint8Array>, eventDue: boolean): Promise<{ text: string; event: string | null }> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body) {
    text += decoder.decode(chunk, { stream: true });
    const blocks = text.split('\n\n').slice(0, -1);
    const withData = blocks.find((block) => block.split('\n').some((line) => line.startsWith('data:')));
    if (withData) return { text, event: /^event: (.*)$/m.exec(withData)?.[1] ?? 'message' };
    if (!eventDue && blocks.length > 0) return { text, event: null };
  }
  return { text, event: null };
}
