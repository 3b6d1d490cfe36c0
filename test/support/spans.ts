import type { TraceSpan } from '../../src/protocol/trace.js';

export const T0 = 1_700_000_000_000;

/** A running tool-call span started at `T0`, with whatever `overrides` change. */
export const runningSpan = (id: string, sessionId: string, turnId: string, overrides: Partial<TraceSpan> = {}): TraceSpan => ({
  id,
  sessionId,
  turnId,
  kind: 'tool_call',
  name: 'read_file',
  source: 'registry',
  status: 'running',
  errorCode: null,
  startedAtMs: T0,
  endedAtMs: null,
  ...overrides,
});
