/**
 * `idle_session_bytes`: JS heap retained per open, idle session (created, no turn yet) on one
 * runtime with `sqliteStorage(':memory:')`; then, informational, the same sessions after one turn each. Needs `global.gc`; run.ts spawns
 * `node --expose-gc --import tsx bench/memory.ts` when it was started without it.
 * Run directly, it prints one JSON line with the result.
 */
import { pathToFileURL } from 'node:url';
import { createRuntime, sqliteStorage, type SessionHandle } from '../src/index.js';
import { gcIfAvailable, readTool, stepModel } from './common.js';

export interface MemoryResult {
  sessions: number;
  bytesPerSession: number;
  heapDeltaBytes: number;
  externalDeltaBytes: number;
  rssDeltaBytes: number;
  gcAvailable: boolean;
  /** Informational: heap per session once each has run one 3-step turn (history, replay ring, outcome). */
  bytesPerSessionAfterTurn: number;
}

function settledHeap(): NodeJS.MemoryUsage {
  for (let i = 0; i < 4; i++) gcIfAvailable();
  return process.memoryUsage();
}

export async function measureIdleSessionMemory(count: number): Promise<MemoryResult> {
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: stepModel(2), tools: [readTool()] });
  // Warm up every code path a session creation touches, so lazily built structures are not charged to sessions.
  const warm: SessionHandle[] = [];
  for (let i = 0; i < 20; i++) warm.push(await runtime.createSession({ agent: 'default', permissionMode: 'auto' }));

  const before = settledHeap();
  const sessions: SessionHandle[] = [];
  for (let i = 0; i < count; i++) sessions.push(await runtime.createSession({ agent: 'default', permissionMode: 'auto' }));
  const after = settledHeap();

  const heapDeltaBytes = after.heapUsed - before.heapUsed;

  for (const [i, session] of sessions.entries()) {
    const turn = await session.startTurn({ clientRequestId: `m${i}`, input: [{ type: 'text', text: 'read two files' }] });
    if (turn.ok) await session.waitForTurn(turn.turnId);
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  const afterTurn = settledHeap();

  const result: MemoryResult = {
    sessions: sessions.length,
    bytesPerSession: heapDeltaBytes / sessions.length,
    heapDeltaBytes,
    externalDeltaBytes: after.external - before.external,
    rssDeltaBytes: after.rss - before.rss,
    gcAvailable: typeof (globalThis as { gc?: unknown }).gc === 'function',
    bytesPerSessionAfterTurn: (afterTurn.heapUsed - before.heapUsed) / sessions.length,
  };
  await runtime.shutdown();
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const count = Number(process.argv[2] ?? 1_000);
  const result = await measureIdleSessionMemory(count);
  console.log(JSON.stringify(result));
}
