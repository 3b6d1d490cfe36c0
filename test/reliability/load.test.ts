import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createRuntime, defineTool, type ModelPort, type Runtime, type SessionHandle, type UpdateEnvelope } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';

/**
 * Issue 4, item 6: 200 sessions with overlapping turns, each with tool calls and an approval, on
 * PostgreSQL (pg.Pool default size 10, shared by all sessions of the runtime) and on a SQLite file.
 */

const SESSIONS = 200;
const TURNS_PER_SESSION = 2;

const read = defineTool({
  name: 'read_note',
  description: 'read a note',
  effect: 'read',
  input: z.object({ n: z.number() }),
  execute: async ({ n }) => ({ status: 'succeeded', content: `note ${n}` }),
});
const write = defineTool({
  name: 'write_note',
  description: 'write a note (asks in ask mode)',
  effect: 'write',
  input: z.object({ n: z.number() }),
  execute: async ({ n }) => ({ status: 'succeeded', content: `wrote ${n}` }),
});

/** A zero-latency model that reads, then writes (which asks for approval), then answers — decided from the request. */
const model: ModelPort = {
  capabilities: { contextWindow: 200_000, maxOutputTokens: 4_000, maxReasoningTokens: 0 },
  async *stream(request) {
    const last = request.messages.at(-1);
    const next =
      last?.role === 'tool' && last.toolName === 'write_note'
        ? { text: 'done', toolCalls: [] }
        : last?.role === 'tool'
          ? { text: 'writing', toolCalls: [{ id: `call_${randomUUID()}`, name: 'write_note', argumentsText: '{"n":2}' }] }
          : { text: 'reading', toolCalls: [{ id: `call_${randomUUID()}`, name: 'read_note', argumentsText: '{"n":1}' }] };
    yield { type: 'text_delta' as const, text: next.text };
    yield { type: 'response_completed' as const, response: { text: next.text, reasoning: '', toolCalls: next.toolCalls } };
  },
};

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;

describe.each(durableTargets)('load on $name', ({ name, skip, create }) => {
  let db: DurableDatabase | undefined;
  let runtime: Runtime | undefined;
  afterAll(async () => {
    await runtime?.shutdown();
    await db?.drop();
  });

  it.skipIf(skip)(`${SESSIONS} sessions × ${TURNS_PER_SESSION} overlapping turns with tools and approvals all finish intact`, async () => {
    db = create();
    runtime = await createRuntime({ storage: db.open(), model, tools: [read, write] });
    const sessions: SessionHandle[] = [];
    const updates = new Map<string, UpdateEnvelope[]>();
    for (let i = 0; i < SESSIONS; i++) {
      const session = await runtime.createSession({ permissionMode: 'ask' });
      const seen: UpdateEnvelope[] = [];
      updates.set(session.id, seen);
      session.updates$.subscribe((u) => {
        seen.push(u);
        if (u.update.type === 'permission_requested') {
          void session.resolvePermission({ turnId: u.turnId, toolCallId: u.update.toolCallId, decision: 'allow_once' });
        }
      });
      sessions.push(session);
    }

    const started = performance.now();
    const latencies: number[] = [];
    const outcomes = await Promise.all(
      sessions.map(async (session, i) => {
        const results = [];
        for (let t = 0; t < TURNS_PER_SESSION; t++) {
          const t0 = performance.now();
          const turn = await session.startTurn({ clientRequestId: `s${i}-t${t}`, input: [{ type: 'text', text: `task ${t}` }] });
          if (!turn.ok) throw new Error(`refused: ${JSON.stringify(turn.error)}`);
          results.push(await session.waitForTurn(turn.turnId));
          latencies.push(performance.now() - t0);
        }
        return results;
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;
    const turns = SESSIONS * TURNS_PER_SESSION;
    console.log(
      `load on ${name}: ${turns} turns in ${elapsedS.toFixed(2)} s → ${(turns / elapsedS).toFixed(1)} turns/s; ` +
        `turn latency p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms`,
    );

    expect(outcomes.flat().every((o) => o.status === 'completed')).toBe(true);
    const storage = db.open();
    try {
      for (const session of sessions) {
        const seen = updates.get(session.id)!;
        expect(seen.map((u) => u.sequence)).toEqual(seen.map((_, i) => i + 1));
        const stored = await storage.listMessages(session.id);
        const calls = stored.flatMap((m) => (m.message.role === 'assistant' ? m.message.toolCalls.map((c) => c.id) : []));
        const results = stored.flatMap((m) => (m.message.role === 'tool' ? [m.message.toolCallId] : []));
        expect(results).toEqual(calls);
        expect(calls).toHaveLength(2 * TURNS_PER_SESSION);
        expect(stored.map((m) => m.sequence)).toEqual(stored.map((_, i) => i + 1));
        const rows = await storage.listTurns(session.id);
        expect(rows.map((r) => r.status)).toEqual(Array(TURNS_PER_SESSION).fill('completed'));
      }
    } finally {
      await storage.close();
    }
  });
});
