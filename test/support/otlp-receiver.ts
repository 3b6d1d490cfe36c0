import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';

/**
 * An OTLP/HTTP trace receiver on loopback, for OpenTelemetry's real exporters to send to:
 * `POST /v1/traces` with `http/json` (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), gzip or not. Each
 * span is kept flattened — ids in hex, attributes as plain values — with its resource's
 * attributes. Anything else (another path, protobuf) is answered 415/404 and counted in `refused`.
 */

const anyValue: z.ZodType<AnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.number(), z.string()]).optional(),
    doubleValue: z.number().optional(),
    arrayValue: z.object({ values: z.array(anyValue).optional() }).optional(),
  }),
);

interface AnyValue {
  stringValue?: string | undefined;
  boolValue?: boolean | undefined;
  intValue?: number | string | undefined;
  doubleValue?: number | undefined;
  arrayValue?: { values?: AnyValue[] | undefined } | undefined;
}

const keyValues = z.array(z.object({ key: z.string(), value: anyValue })).optional();

const exportRequest = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: keyValues }).optional(),
        scopeSpans: z
          .array(
            z.object({
              scope: z.object({ name: z.string() }).optional(),
              spans: z
                .array(
                  z.object({
                    traceId: z.string(),
                    spanId: z.string(),
                    parentSpanId: z.string().optional(),
                    name: z.string(),
                    kind: z.number(),
                    startTimeUnixNano: z.union([z.string(), z.number()]),
                    endTimeUnixNano: z.union([z.string(), z.number()]),
                    attributes: keyValues,
                    status: z.object({ code: z.number().optional(), message: z.string().optional() }).optional(),
                  }),
                )
                .optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

/** OTLP's span kinds, as numbers on the wire. */
export const OTLP_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
/** OTLP's status codes. */
export const OTLP_STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  statusCode: number;
  scope: string;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The endpoint to give an exporter (`OTEL_EXPORTER_OTLP_ENDPOINT`): the exporter adds `/v1/traces`. */
  url: string;
  readonly spans: readonly ReceivedSpan[];
  /** Requests it could not take (wrong path or content type, a body that is no OTLP JSON). */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const server = createServer((request, response) => {
    void (async () => {
      const body = await bodyOf(request);
      if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
        refused += 1;
        response.writeHead(request.url === '/v1/traces' ? 415 : 404).end();
        return;
      }
      const parsed = exportRequest.safeParse(JSON.parse(body.toString('utf8')));
      if (!parsed.success) {
        refused += 1;
        response.writeHead(400).end();
        return;
      }
      spans.push(...flatten(parsed.data));
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    })().catch(() => {
      refused += 1;
      response.writeHead(400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get refused() {
      return refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

function flatten(request: z.infer<typeof exportRequest>): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans) =>
      (scopeSpans.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind,
        startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
        endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
        attributes: attributesOf(span.attributes),
        statusCode: span.status?.code ?? 0,
        scope: scopeSpans.scope?.name ?? '',
        resource,
      })),
    );
  });
}

function attributesOf(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function valueOf(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
