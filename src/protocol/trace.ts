/** Trace spans (RT-23, RT-26): a side channel that never decides a branch. */

import type { ModelRequest, ModelResponse } from './model.js';
import type { ToolCallPart } from './messages.js';
import type { ToolResult } from './tool-result.js';
import type { TokenUsage } from './usage.js';

export type SpanKind = 'turn' | 'model_call' | 'tool_call';
export type SpanSource = 'model' | 'registry' | 'control_tool' | 'system';
export type SpanStatus = 'running' | 'succeeded' | 'failed' | 'cancelled' | 'denied' | 'outcome_unknown';

export interface TraceSpan {
  id: string;
  sessionId: string;
  turnId: string;
  kind: SpanKind;
  name: string;
  source: SpanSource;
  status: SpanStatus;
  errorCode: string | null;
  startedAtMs: number;
  endedAtMs: number | null;
  /** What is known of the span as it starts, for the span's observers (OpenTelemetry, metrics); never stored. */
  facts?: SpanFacts;
}

/**
 * Issue 27: what a span says beyond its row, in turnchart's own words. The span observers map it to
 * their vocabularies (the OpenTelemetry GenAI conventions, Prometheus names), so the recorder stays
 * the one place spans come from. Each kind sets its own fields; any may be missing.
 */
export interface SpanFacts {
  // A turn.
  agent?: string;
  /**
   * The W3C `traceparent` (version 00) of the turn's parent — the caller's span, or the span the turn
   * was first started under before it was resumed here — on the turn span's start. The OpenTelemetry
   * exporter makes the turn span its child; without it the turn starts a trace of its own.
   */
  traceParent?: string;
  /** Compactions made inside the turn (CP-1), on the turn span's end. */
  compactions?: number;
  runId?: string;
  trigger?: string;
  /** The turn goes on after its host went away (issue 26), and why. */
  resumeReason?: string;
  /** The session was taken from another owner as it opened. */
  leaseTakeover?: boolean;
  // A model call.
  provider?: string;
  requestModel?: string;
  responseModel?: string;
  usage?: TokenUsage;
  finishReasons?: string[];
  /** Milliseconds from the call's start to its first text or reasoning. */
  firstTokenMs?: number;
  /** The call was the token budget's last one, or came after a compaction. */
  concluding?: boolean;
  // A tool call.
  toolCallId?: string;
  /** `function` (a registry tool), `extension` (an MCP tool), `control` (turnchart's own: plans, delegation). */
  toolType?: 'function' | 'extension' | 'control';
  /** Who let the call through or stopped it, and how long it waited for a person. */
  permissionDecision?: string;
  permissionWaitMs?: number;
  /** Guardrails that acted on the call or the turn (loop stop, mistake limit, hook). */
  guardrails?: string[];
  /**
   * What the span carried — only while an observer records content (`TraceRecorder.recordsContent`),
   * so nothing is gathered otherwise. References to what the runtime holds anyway, never copies: an
   * observer reads them as the span starts or ends, and bounds and redacts what it keeps.
   */
  content?: SpanContent;
}

/** Issue 27: the content of a span (see {@link SpanFacts.content}). */
export interface SpanContent {
  /** A model call's start: the request as sent. */
  request?: ModelRequest;
  /** A model call's end: the response. */
  response?: ModelResponse;
  /** A tool call's start: the call with its arguments. */
  call?: ToolCallPart;
  /** A tool call's end: its result. */
  result?: ToolResult;
}
