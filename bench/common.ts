/** Shared pieces of the benchmark suite: statistics, a zero-latency model, a trivial tool, a write tracker. */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { z } from 'zod';
import {
  defineTool,
  type AnyTool,
  type ModelPort,
  type ModelRequest,
  type ModelStreamEvent,
  type SessionStorage,
  type ToolCallPart,
} from '../src/index.js';

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function gcIfAvailable(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) gc();
}

/** A trivial read tool: validates `{ path }` and answers at once. */
export function readTool(): AnyTool {
  return defineTool({
    name: 'read_file',
    description: 'Read a file',
    effect: 'read',
    input: z.object({ path: z.string() }),
    execute: async (args) => ({ status: 'succeeded', content: `contents of ${args.path}` }),
  });
}

export const STEP_DELTAS = ['step ', 'in ', 'progress'] as const;
export const FINAL_DELTAS = ['all ', 'done'] as const;

/**
 * A zero-latency model: for the first `toolSteps` calls of a turn it streams a few text deltas and asks
 * for one `read_file` call (arguments differ per step, so the doom-loop guard never fires), then it
 * answers with text only. Stateless: the step is the number of assistant messages after the last user
 * message, so one port serves any number of sessions and turns, sequential or concurrent.
 */
export function stepModel(toolSteps: number): ModelPort {
  let callSeq = 0;
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const step = stepOf(request);
      if (step < toolSteps) {
        for (const text of STEP_DELTAS) yield { type: 'text_delta', text };
        const call: ToolCallPart = { id: `call_${++callSeq}`, name: 'read_file', argumentsText: JSON.stringify({ path: `f${step}.txt` }) };
        yield { type: 'response_completed', response: { text: STEP_DELTAS.join(''), reasoning: '', toolCalls: [call] } };
      } else {
        for (const text of FINAL_DELTAS) yield { type: 'text_delta', text };
        yield { type: 'response_completed', response: { text: FINAL_DELTAS.join(''), reasoning: '', toolCalls: [] } };
      }
    },
  };
}

function stepOf(request: ModelRequest): number {
  let step = 0;
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const role = request.messages[i]!.role;
    if (role === 'user') break;
    if (role === 'assistant') step += 1;
  }
  return step;
}

/**
 * Delegates to a storage and counts calls in flight, so a measurement can wait until background
 * writes (the runtime's trace queue) have landed. Used on both sides of a comparison.
 */
export class TrackedStorage implements SessionStorage {
  private pending = 0;
  writes = 0;

  constructor(private readonly inner: SessionStorage) {}

  /** Resolves once no call is in flight across a macrotask boundary (queued writes start on microtasks). */
  async idle(): Promise<void> {
    do await nextMacrotask();
    while (this.pending > 0);
  }

  private async track<T>(call: Promise<T>): Promise<T> {
    this.pending += 1;
    this.writes += 1;
    try {
      return await call;
    } finally {
      this.pending -= 1;
    }
  }

  migrate: SessionStorage['migrate'] = () => this.inner.migrate();
  createSession: SessionStorage['createSession'] = (row) => this.track(this.inner.createSession(row));
  getSession: SessionStorage['getSession'] = (id) => this.inner.getSession(id);
  setPermissionMode: SessionStorage['setPermissionMode'] = (id, mode) => this.track(this.inner.setPermissionMode(id, mode));
  beginTurn: SessionStorage['beginTurn'] = (turn, messages) => this.track(this.inner.beginTurn(turn, messages));
  endTurn: SessionStorage['endTurn'] = (turnId, end) => this.track(this.inner.endTurn(turnId, end));
  getTurn: SessionStorage['getTurn'] = (turnId) => this.inner.getTurn(turnId);
  listTurns: SessionStorage['listTurns'] = (sessionId) => this.inner.listTurns(sessionId);
  appendMessage: SessionStorage['appendMessage'] = (message) => this.track(this.inner.appendMessage(message));
  listMessages: SessionStorage['listMessages'] = (sessionId) => this.inner.listMessages(sessionId);
  savePlan: SessionStorage['savePlan'] = (row) => this.track(this.inner.savePlan(row));
  latestPlan: SessionStorage['latestPlan'] = (sessionId) => this.inner.latestPlan(sessionId);
  writeSpans: SessionStorage['writeSpans'] = (writes) => this.track(this.inner.writeSpans(writes));
  listSpans: SessionStorage['listSpans'] = (sessionId) => this.inner.listSpans(sessionId);
  saveCompaction: SessionStorage['saveCompaction'] = (row) => this.track(this.inner.saveCompaction(row));
  listCompactions: SessionStorage['listCompactions'] = (sessionId) => this.inner.listCompactions(sessionId);
  activeCompaction: SessionStorage['activeCompaction'] = (sessionId) => this.inner.activeCompaction(sessionId);
  rewindTo: SessionStorage['rewindTo'] = (sessionId, compactionId, nowMs) => this.track(this.inner.rewindTo(sessionId, compactionId, nowMs));
  correctInterrupted: SessionStorage['correctInterrupted'] = (nowMs) => this.inner.correctInterrupted(nowMs);
  close: SessionStorage['close'] = () => this.inner.close();
}

/** A storage that stores nothing: isolates orchestration cost from database cost (profiling only). */
export class NullStorage implements SessionStorage {
  async migrate(): Promise<void> {}
  async createSession(): Promise<void> {}
  async getSession(): Promise<undefined> {
    return undefined;
  }
  async setPermissionMode(): Promise<void> {}
  async beginTurn(): Promise<void> {}
  async endTurn(): Promise<void> {}
  async getTurn(): Promise<undefined> {
    return undefined;
  }
  async listTurns(): Promise<[]> {
    return [];
  }
  async appendMessage(): Promise<void> {}
  async listMessages(): Promise<[]> {
    return [];
  }
  async savePlan(): Promise<void> {}
  async latestPlan(): Promise<undefined> {
    return undefined;
  }
  async writeSpans(): Promise<{ unmatchedEnds: number }> {
    return { unmatchedEnds: 0 };
  }
  async listSpans(): Promise<[]> {
    return [];
  }
  async saveCompaction(): Promise<void> {}
  async listCompactions(): Promise<[]> {
    return [];
  }
  async activeCompaction(): Promise<undefined> {
    return undefined;
  }
  async rewindTo(): Promise<void> {}
  async correctInterrupted(): Promise<{ interruptedTurns: number; unknownSpans: number }> {
    return { interruptedTurns: 0, unknownSpans: 0 };
  }
  async close(): Promise<void> {}
}
