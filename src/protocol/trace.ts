/** Trace spans (RT-23, RT-26): a side channel that never decides a branch. */

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
}
