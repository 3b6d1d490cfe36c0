import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { SpanEnd } from '../../storage/session-storage.js';
import type { SpanFacts, TraceSpan } from '../protocol/trace.js';
import type { SpanObserver } from '../runtime/trace-recorder.js';
import { DEFAULT_CONTENT_LIMITS, inputMessages, outputMessages, systemInstructions, toolArguments, toolResult, type ContentLimits } from './genai-content.js';
import { remoteParentContext, traceParentOf } from './remote-parent.js';

/** The instrumentation scope the spans are reported under. */
const SCOPE = 'turnchart';

/**
 * Spans open at once past which new ones are not exported (counted in `dropped`): an end that never
 * comes — a runtime that lost a span's end to a crash of its own effect — must not grow the map forever.
 */
const MAX_OPEN_SPANS = 100_000;

export interface OtelSpanOptions {
  /**
   * Records message contents (model input and output, system instructions, tool arguments and
   * results), sanitized and bounded: off by default, since they hold what users and tools wrote.
   */
  recordContent?: boolean;
  /** How much content is kept per attribute (with `recordContent`). */
  contentLimits?: Partial<ContentLimits>;
  /** The tracer to report to; by default `@opentelemetry/api`'s global one (a no-op until an SDK is registered). */
  tracer?: Tracer;
}

interface OpenSpan {
  span: Span;
  turnId: string;
  kind: TraceSpan['kind'];
}

/**
 * Issue 27: the runtime's spans as OpenTelemetry spans, named and attributed by the GenAI semantic
 * conventions — `invoke_agent {agent}` (INTERNAL) per turn, `chat {model}` (CLIENT) per model call,
 * `execute_tool {tool}` (INTERNAL) per tool call, children of their turn's span; turnchart's own
 * facts under `turnchart.*`. A span observer of the trace recorder, so the stored `trace_spans` and
 * these come from the same calls. A turn whose start carries a `traceParent` is a child of that
 * remote span; otherwise it starts a trace.
 */
export class OtelSpans implements SpanObserver {
  readonly recordsContent: boolean;
  /** Span starts not exported: too many open at once. */
  dropped = 0;
  private readonly tracer: Tracer;
  private readonly limits: ContentLimits;
  private readonly open = new Map<string, OpenSpan>();
  /** Each open turn's span (its resumed part's, when resumed here), by turn id: its calls' parent. */
  private readonly turns = new Map<string, Span>();

  constructor(options: OtelSpanOptions = {}) {
    this.recordsContent = options.recordContent === true;
    this.limits = { ...DEFAULT_CONTENT_LIMITS, ...options.contentLimits };
    this.tracer = options.tracer ?? trace.getTracer(SCOPE);
  }

  started(span: TraceSpan): void {
    if (this.open.has(span.id)) return;
    if (this.open.size >= MAX_OPEN_SPANS) {
      this.dropped += 1;
      return;
    }
    const facts = span.facts ?? {};
    const started = span.kind === 'turn' ? this.startTurn(span, facts) : this.startCall(span, facts);
    this.open.set(span.id, { span: started, turnId: span.turnId, kind: span.kind });
    if (span.kind === 'turn') this.turns.set(span.turnId, started);
  }

  ended(spanId: string, end: SpanEnd): void {
    const open = this.open.get(spanId);
    if (!open) return;
    this.open.delete(spanId);
    const facts = end.facts ?? {};
    const { span } = open;
    span.setAttributes(endAttributes(open.kind, facts));
    if (this.recordsContent && open.kind !== 'turn') span.setAttributes(this.endContent(facts));
    span.setAttribute('turnchart.status', end.status);
    if (end.status === 'failed' || end.status === 'outcome_unknown') {
      const type = end.errorCode ?? (end.status === 'failed' ? '_OTHER' : 'outcome_unknown');
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    } else if (end.status === 'succeeded') {
      span.setStatus({ code: SpanStatusCode.OK });
    }
    if (end.errorCode && end.status !== 'failed') span.setAttribute('turnchart.error_code', end.errorCode);
    if (open.kind === 'turn') this.endTurn(open.turnId, span, end.endedAtMs);
    span.end(end.endedAtMs);
  }

  /** The OpenTelemetry trace id of a turn open on this host (for log lines); undefined when it is not open here. */
  traceIdOf(turnId: string): string | undefined {
    return this.turns.get(turnId)?.spanContext().traceId;
  }

  /** The `traceparent` of a turn's span open on this host: what a process continuing the turn passes on as its parent. */
  traceParentOf(turnId: string): string | undefined {
    const span = this.turns.get(turnId);
    return span ? traceParentOf(span.spanContext()) : undefined;
  }

  /** Ends every span still open (at `atMs`), calls before their turns, as a host stops: a span never ended is never exported. */
  endAll(atMs: number): void {
    const open = [...this.open.values()].sort((a, b) => Number(a.kind === 'turn') - Number(b.kind === 'turn'));
    this.open.clear();
    this.turns.clear();
    // The host stops with them open: their turns are parked (issue 26), to go on wherever the session opens next.
    for (const { span } of open) abandon(span, atMs, 'parked');
  }

  private startTurn(span: TraceSpan, facts: SpanFacts): Span {
    const parent = (facts.traceParent !== undefined && remoteParentContext(facts.traceParent)) || ROOT_CONTEXT;
    const name = facts.agent !== undefined ? `invoke_agent ${facts.agent}` : 'invoke_agent';
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      ...optional('gen_ai.agent.name', facts.agent),
      ...optional('gen_ai.provider.name', facts.provider),
      ...optional('gen_ai.request.model', facts.requestModel),
      ...common(span),
      ...optional('turnchart.run.id', facts.runId),
      ...optional('turnchart.trigger', facts.trigger),
      ...optional('turnchart.resume.reason', facts.resumeReason),
      ...optional('turnchart.lease.takeover', facts.leaseTakeover),
    };
    return this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: span.startedAtMs, attributes }, parent);
  }

  private startCall(span: TraceSpan, facts: SpanFacts): Span {
    const turn = this.turns.get(span.turnId);
    const parent = turn ? trace.setSpan(ROOT_CONTEXT, turn) : ROOT_CONTEXT;
    if (span.kind === 'model_call') {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'chat',
        ...optional('gen_ai.provider.name', facts.provider),
        ...optional('gen_ai.request.model', facts.requestModel),
        ...common(span),
        ...optional('turnchart.model_call.concluding', facts.concluding),
        ...(this.recordsContent && facts.content?.request && {
          'gen_ai.system_instructions': systemInstructions(facts.content.request, this.limits),
          'gen_ai.input.messages': inputMessages(facts.content.request, this.limits),
        }),
      };
      const name = facts.requestModel !== undefined ? `chat ${facts.requestModel}` : 'chat';
      return this.tracer.startSpan(name, { kind: SpanKind.CLIENT, startTime: span.startedAtMs, attributes }, parent);
    }
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': span.name,
      ...optional('gen_ai.tool.call.id', facts.toolCallId),
      // The conventions know `function`, `extension` and `datastore`: turnchart's own tools (plans, delegation) run as functions.
      ...optional('gen_ai.tool.type', facts.toolType === 'control' ? 'function' : facts.toolType),
      ...(facts.toolType === 'control' && { 'turnchart.tool.control': true }),
      ...common(span),
      ...(this.recordsContent && facts.content?.call && { 'gen_ai.tool.call.arguments': toolArguments(facts.content.call, this.limits) }),
    };
    return this.tracer.startSpan(`execute_tool ${span.name}`, { kind: SpanKind.INTERNAL, startTime: span.startedAtMs, attributes }, parent);
  }

  private endContent(facts: SpanFacts): Attributes {
    const content = facts.content;
    if (!content) return {};
    return {
      ...(content.response && { 'gen_ai.output.messages': outputMessages(content.response, this.limits) }),
      ...(content.result && { 'gen_ai.tool.call.result': toolResult(content.result, this.limits) }),
    };
  }

  /** A turn's end also ends what its calls left open (a span never ended is never exported). */
  private endTurn(turnId: string, span: Span, atMs: number): void {
    if (this.turns.get(turnId) === span) this.turns.delete(turnId);
    for (const [id, open] of this.open) {
      if (open.turnId !== turnId || open.kind === 'turn') continue;
      this.open.delete(id);
      abandon(open.span, atMs);
    }
  }
}

/** A span whose end the runtime never reported: `parked` as its host stopped, else `abandoned`. */
function abandon(span: Span, atMs: number, status: 'parked' | 'abandoned' = 'abandoned'): void {
  span.setAttribute('turnchart.status', status);
  span.end(atMs);
}

/** What every span says of where it belongs: the conversation (the session), the turn, the stored span's id. */
function common(span: TraceSpan): Attributes {
  return {
    'gen_ai.conversation.id': span.sessionId,
    'turnchart.session.id': span.sessionId,
    'turnchart.turn.id': span.turnId,
    'turnchart.span.id': span.id,
  };
}

function endAttributes(kind: TraceSpan['kind'], facts: SpanFacts): Attributes {
  const usage = facts.usage;
  return {
    ...(usage && {
      'gen_ai.usage.input_tokens': usage.inputTokens,
      'gen_ai.usage.output_tokens': usage.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': usage.cachedInputTokens,
      'gen_ai.usage.reasoning.output_tokens': usage.reasoningTokens,
    }),
    ...optional('gen_ai.response.model', facts.responseModel),
    ...optional('gen_ai.response.finish_reasons', facts.finishReasons),
    // Seconds, as the conventions measure it.
    ...(facts.firstTokenMs !== undefined && { 'gen_ai.response.time_to_first_chunk': facts.firstTokenMs / 1000 }),
    ...optional('turnchart.permission.decision', facts.permissionDecision),
    ...optional('turnchart.permission.wait_ms', facts.permissionWaitMs),
    ...optional('turnchart.guardrails', facts.guardrails),
    ...(kind === 'turn' && facts.compactions !== undefined && { 'turnchart.compactions': facts.compactions }),
  };
}

function optional(key: string, value: string | number | boolean | string[] | undefined): Attributes {
  return value === undefined ? {} : { [key]: value };
}

/**
 * Attaches an {@link OtelSpans} exporter to a runtime: every span it starts and ends from now on is
 * reported to OpenTelemetry. For an embedder with an SDK of its own; `turnchart serve --otel` and
 * `turnchart worker --otel` attach one to theirs. `stop()` detaches it and ends what is still open.
 */
export function otelSpans(runtime: { observeSpans(observer: SpanObserver): () => void }, options: OtelSpanOptions = {}): { spans: OtelSpans; stop(): void } {
  const spans = new OtelSpans(options);
  const detach = runtime.observeSpans(spans);
  return {
    spans,
    stop: () => {
      detach();
      spans.endAll(Date.now());
    },
  };
}
