import type { SpanEnd } from '../../storage/session-storage.js';
import type { TraceSpan } from '../protocol/trace.js';
import type { SpanObserver } from '../runtime/trace-recorder.js';
import { BoundedLabel } from './metrics-labels.js';
import type { TurnchartMetrics } from './metrics.js';

/**
 * Spans started and never ended here are forgotten past this many (oldest first): a turn parked at
 * shutdown or lost with its session's lease has no end in this process, and the map must not grow
 * with every one of them over a host's life.
 */
const MAX_OPEN_SPANS = 100_000;

/** The suffix of the span a resumed turn goes on under (`turn:<id>:resumed`, `turn-effects.ts`). */
const RESUMED = ':resumed';

/** Distinct values kept per label before `other`: agents are configured, tools and models are not (MCP servers, providers). */
const AGENT_LABELS = 100;
const TOOL_LABELS = 200;
const MODEL_LABELS = 50;

/**
 * The runtime's spans as metrics (issue 27): turns, model calls, tool calls, approval waits and
 * tokens. It runs inside the trace recorder's calls, on the agent loop's path, so a start keeps the
 * span itself until its end — the recorder hands over an object it already made, and changes it only
 * after the end — and an end is a map delete and a few observes.
 *
 * A turn's final status is its span's end, read back into the stored turn's words: the end is made
 * from the same outcome as the turn row's `endTurn` write (`session-effects.ts`), `succeeded` for
 * `completed` and `cancelled` with `run_timeout` for `timed_out`. A turn counts only where its span
 * started: a resumed turn is counted once, by its `…:resumed` span on the host that finished it, never
 * by the end the same call gives its first span (which started on the host that went away).
 */
export class SpanMetrics implements SpanObserver {
  private readonly open = new Map<string, TraceSpan>();
  private readonly agents = new BoundedLabel(AGENT_LABELS);
  private readonly tools = new BoundedLabel(TOOL_LABELS);
  private readonly models = new BoundedLabel(MODEL_LABELS);

  constructor(private readonly metrics: TurnchartMetrics) {}

  started(span: TraceSpan): void {
    if (this.open.size >= MAX_OPEN_SPANS) this.open.delete(this.open.keys().next().value!);
    // A turn parked and resumed in this same process: its first span ends with the resumed one, and is not counted again.
    if (span.kind === 'turn' && span.id.endsWith(RESUMED)) this.open.delete(span.id.slice(0, -RESUMED.length));
    this.open.set(span.id, span);
  }

  ended(spanId: string, end: SpanEnd): void {
    const span = this.open.get(spanId);
    if (!span) return;
    this.open.delete(spanId);
    const seconds = Math.max(0, end.endedAtMs - span.startedAtMs) / 1000;
    if (span.kind === 'turn') this.turnEnded(span, end, seconds);
    else if (span.kind === 'model_call') this.modelCallEnded(span, end, seconds);
    else this.toolCallEnded(span, end, seconds);
  }

  private turnEnded(span: TraceSpan, end: SpanEnd, seconds: number): void {
    const labels = { agent: this.agents.of(span.facts?.agent), status: turnStatusOf(end) };
    this.metrics.turns.inc(labels);
    this.metrics.turnDuration.observe(labels, seconds);
  }

  private modelCallEnded(span: TraceSpan, end: SpanEnd, seconds: number): void {
    const model = this.models.of(end.facts?.responseModel ?? span.facts?.requestModel);
    this.metrics.modelCallDuration.observe({ model, status: end.status }, seconds);
    const facts = end.facts;
    if (facts?.firstTokenMs !== undefined) this.metrics.timeToFirstToken.observe({ model }, Math.max(0, facts.firstTokenMs) / 1000);
    const usage = facts?.usage;
    if (!usage) return;
    const tokens = this.metrics.tokens;
    tokens.inc({ model, type: 'input' }, usage.inputTokens);
    tokens.inc({ model, type: 'output' }, usage.outputTokens);
    tokens.inc({ model, type: 'cached_input' }, usage.cachedInputTokens);
    tokens.inc({ model, type: 'reasoning' }, usage.reasoningTokens);
  }

  private toolCallEnded(span: TraceSpan, end: SpanEnd, seconds: number): void {
    const labels = { tool: this.tools.of(span.name), status: end.status };
    this.metrics.toolCalls.inc(labels);
    this.metrics.toolCallDuration.observe(labels, seconds);
    const facts = end.facts;
    // Only a call that waited for a person has a wait: one a rule or the mode let through has none.
    if (facts?.permissionWaitMs !== undefined) {
      this.metrics.permissionWait.observe({ decision: decisionOf(facts.permissionDecision) }, Math.max(0, facts.permissionWaitMs) / 1000);
    }
  }
}

/** The stored turn's status the span's end was made from (`spanStatusOf` in `session-effects.ts`, turned back). */
function turnStatusOf(end: SpanEnd): string {
  switch (end.status) {
    case 'succeeded':
      return 'completed';
    case 'cancelled':
      return end.errorCode === 'run_timeout' ? 'timed_out' : 'cancelled';
    case 'outcome_unknown':
      return 'interrupted';
    default:
      return end.status;
  }
}

/** `allowed by user` → `allowed_by_user`: a verdict and a decider, each from a fixed list (`protocol/audit.ts`). */
function decisionOf(decision: string | undefined): string {
  if (decision === undefined) return 'unknown';
  return /^(allowed|denied) by (mode|rule|hook|user|timeout)$/.test(decision) ? decision.replaceAll(' ', '_') : 'other';
}
