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
import { STORAGE_METHODS, type StorageMethod } from '../storage/faulty-storage.js';

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

/**
 * A trivial read tool: validates `{ path }` and answers at once. The host registers its own workspace
 * `read_file`, so host benchmarks give this one another name.
 */
export function readTool(name = 'read_file'): AnyTool {
  return defineTool({
    name,
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
export function stepModel(toolSteps: number, toolName = 'read_file'): ModelPort {
  let callSeq = 0;
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const step = stepOf(request);
      if (step < toolSteps) {
        for (const text of STEP_DELTAS) yield { type: 'text_delta', text };
        const call: ToolCallPart = { id: `call_${++callSeq}`, name: toolName, argumentsText: JSON.stringify({ path: `f${step}.txt` }) };
        yield { type: 'response_completed', response: { text: STEP_DELTAS.join(''), reasoning: '', toolCalls: [call] } };
      } else {
        for (const text of FINAL_DELTAS) yield { type: 'text_delta', text };
        yield { type: 'response_completed', response: { text: FINAL_DELTAS.join(''), reasoning: '', toolCalls: [] } };
      }
    },
  };
}

export function stepOf(request: ModelRequest): number {
  let step = 0;
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const role = request.messages[i]!.role;
    if (role === 'user') break;
    if (role === 'assistant') step += 1;
  }
  return step;
}

/** The storage calls a host waits on but that write nothing. */
const READS: ReadonlySet<StorageMethod> = new Set<StorageMethod>([
  'migrate',
  'ping',
  'getSession',
  'listSessions',
  'liveOwnersOn',
  'leaseHolder',
  'sessionStanding',
  'heldSessionCount',
  'turnActivity',
  'principalTokens',
  'unheldSessionsWithWork',
  'listApprovals',
  'listQueuedTurns',
  'getTurn',
  'listTurns',
  'getRun',
  'listRuns',
  'listMessages',
  'latestPlan',
  'listSpans',
  'listCompactions',
  'activeCompaction',
  'correctInterrupted',
  'close',
]);

/**
 * Delegates to a storage and counts writes in flight, so a measurement can wait until background
 * writes (the runtime's trace queue) have landed. Used on both sides of a comparison.
 */
export type TrackedStorage = SessionStorage & {
  /** Writes made so far. */
  readonly writes: number;
  /** Resolves once no write is in flight across a macrotask boundary (queued writes start on microtasks). */
  idle(): Promise<void>;
};

export function trackedStorage(inner: SessionStorage): TrackedStorage {
  let pending = 0;
  let writes = 0;
  const tracked = {
    get writes() {
      return writes;
    },
    async idle() {
      do await nextMacrotask();
      while (pending > 0);
    },
  } as TrackedStorage;
  for (const method of STORAGE_METHODS) {
    const call = inner[method] as (...args: unknown[]) => Promise<unknown>;
    const counted = async (...args: unknown[]) => {
      pending += 1;
      writes += 1;
      try {
        return await call.apply(inner, args);
      } finally {
        pending -= 1;
      }
    };
    Object.defineProperty(tracked, method, { enumerable: true, value: READS.has(method) ? call.bind(inner) : counted });
  }
  return tracked;
}

/** A storage that stores nothing: isolates orchestration cost from database cost (profiling only). */
export class NullStorage implements SessionStorage {
  async migrate(): Promise<void> {}
  async ping(): Promise<void> {}
  async createSession(): Promise<number> {
    return 0;
  }
  async getSession(): Promise<undefined> {
    return undefined;
  }
  async listSessions(): Promise<[]> {
    return [];
  }
  async setPermissionMode(): Promise<void> {}
  async listChildSessions(): Promise<never[]> {
    return [];
  }
  async switchAgent(): Promise<void> {}
  async acquireSession(): Promise<{ ok: false; reason: 'unknown' }> {
    return { ok: false, reason: 'unknown' };
  }
  async renewLeases(_lease: unknown, sessionIds: string[]): Promise<string[]> {
    return sessionIds;
  }
  async releaseSession(): Promise<void> {}
  async liveOwnersOn(): Promise<[]> {
    return [];
  }
  async leaseHolder(): Promise<null> {
    return null;
  }
  async sessionStanding(): Promise<null> {
    return null;
  }
  async heldSessionCount(): Promise<number> {
    return 0;
  }
  async turnActivity(): Promise<{ active: number; recent: number; oldestRecentMs: null; known: boolean }> {
    return { active: 0, recent: 0, oldestRecentMs: null, known: false };
  }
  async addPrincipalTokens(): Promise<void> {}
  async principalTokens(): Promise<number> {
    return 0;
  }
  async claimStreamSlot(): Promise<boolean> {
    return true;
  }
  async releaseStreamSlot(): Promise<void> {}
  async renewStreamSlots(): Promise<void> {}
  async releaseStreamSlots(): Promise<void> {}
  async expireOwner(): Promise<void> {}
  async unheldSessionsWithWork(): Promise<[]> {
    return [];
  }
  async requestApproval(): Promise<void> {}
  async answerApproval(): Promise<void> {}
  async requestCancel(): Promise<void> {}
  async startApprovedCall(): Promise<void> {}
  async listApprovals(): Promise<[]> {
    return [];
  }
  async reserveUpdateSequence(): Promise<void> {}
  async beginTurn(): Promise<void> {}
  async enqueueTurn(): Promise<void> {}
  async cancelQueuedTurn(): Promise<void> {}
  async listQueuedTurns(): Promise<[]> {
    return [];
  }
  async endTurn(): Promise<void> {}
  async getTurn(): Promise<undefined> {
    return undefined;
  }
  async listTurns(): Promise<[]> {
    return [];
  }
  async getRun(): Promise<undefined> {
    return undefined;
  }
  async listRuns(): Promise<[]> {
    return [];
  }
  async appendMessage(): Promise<void> {}
  async listMessages(): Promise<[]> {
    return [];
  }
  async listAudit(): Promise<[]> {
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
