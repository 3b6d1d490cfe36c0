import { closeSync, constants, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { createRuntime, scriptedModel, sqliteStorage, type Runtime, type ScriptedStep } from '../../../src/index.js';
import { harness, startTurn, type Harness } from '../../support/harness.js';
import { holding, useTempDirs, writeTree } from '../../support/workspace.js';
import { useFifos } from '../../skills/fifo.js';

const tempDir = useTempDirs('turnchart-cancel-');
const fifo = useFifos();

/** The phases a turn went through, from its updates. */
const phases = (h: { updates: { update: { type: string; phase?: string } }[] }) => h.updates.flatMap((u) => (u.update.type === 'phase_changed' ? [u.update.phase] : []));

describe('cancel and stop reach world-state reading and compaction (issue 9, defect 3)', () => {
  let h: Harness | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    await h?.runtime.shutdown();
    h = undefined;
    for (const r of runtimes.splice(0)) await r.shutdown();
  });

  it('cancels a turn whose world-state read hangs (every libuv thread blocked), promptly and without waiting for the read', async () => {
    const workspace = await tempDir();
    await writeTree(workspace, { 'AGENTS.md': 'be brief' });
    // Four blocking reads of FIFOs nobody writes to hold every thread of libuv's default pool,
    // so the next file-system call of the world-state sampling waits behind them.
    const blockers = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const file = path.join(workspace, `blocker-${i}`);
        await fifo(file);
        return file;
      }),
    );
    const hung = blockers.map((file) => open(file, 'r').then((handle) => handle.close()));
    let preparing: () => void = () => undefined;
    const inPreparing = new Promise<void>((resolve) => (preparing = resolve));
    const runtime = await createRuntime({
      storage: sqliteStorage({ filename: ':memory:' }),
      model: scriptedModel([{ text: 'never' }]),
      inspect: (event) => {
        if (event.type === '@xstate.snapshot' && (event.snapshot as AnyMachineSnapshot).matches?.({ running_model: 'preparing' })) preparing();
      },
    });
    runtimes.push(runtime);
    const session = await runtime.createSession({ workspaceDir: workspace });
    const turnId = await startTurn(session, 'go');
    // The turn row and message are written (SQLite needs no thread pool), and the sampling waits for a thread.
    await inPreparing;
    expect(await session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    // Let the blocked reads go; the one the cancelled sampling left behind finds its turn over and writes nothing.
    // Opened for writing synchronously (every thread of the pool is still taken by the readers), and
    // blocking: a reader whose thread has not reached its open yet (a loaded machine) is waited for,
    // where a non-blocking open would fail with ENXIO.
    for (const file of blockers) closeSync(openSync(file, constants.O_WRONLY));
    await Promise.all(hung);
  });

  it('waits for a world-state write under way, then ends the turn cancelled, with nothing written after it', async () => {
    const held = holding(sqliteStorage({ filename: ':memory:' }), 'appendMessage');
    h = await harness([{ text: 'never' }], { storage: held.storage });
    const turnId = await startTurn(h.session, 'go');
    await held.reached;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    held.release();
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(h.model.requests).toHaveLength(0);
    const stored = await h.storage.listMessages(h.session.id);
    // The one world-state message whose write was under way is there, whole; nothing came after the turn ended.
    expect(stored.map((m) => (m.message.role === 'user' ? m.message.kind : m.message.role))).toEqual(['normal', 'world_state']);
    const finished = h.updates.findIndex((u) => u.update.type === 'turn_finished');
    expect(finished).toBe(h.updates.length - 1);
  });

  it('cancels a turn whose summary call never returns; the checkpoint is not stored and the next turn works', async () => {
    const SMALL = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };
    let summaryStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (summaryStarted = resolve));
    const hangingSummary: ScriptedStep = () => {
      summaryStarted();
      return new Promise<never>(() => undefined);
    };
    const model = scriptedModel(
      [{ text: 'reading', toolCalls: [{ name: 'read_file', args: { path: 'x'.repeat(8_000) } }] }, hangingSummary, { text: 'after the cancel' }],
      { capabilities: SMALL },
    );
    h = await harness([], { model });
    const turnId = await startTurn(h.session, 'go');
    await started;
    expect(phases(h)).toContain('compacting');
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(await h.storage.listCompactions(h.session.id)).toEqual([]);
  });

  it('lets shutdown() stop a turn whose summary call never returns, or park it (issue 26)', async () => {
    const SMALL = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };
    let summaryStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (summaryStarted = resolve));
    const model = scriptedModel(
      [
        { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: 'x'.repeat(8_000) } }] },
        () => {
          summaryStarted();
          return new Promise<never>(() => undefined);
        },
      ],
      { capabilities: SMALL },
    );
    const local = await harness([], { model, resumeTurns: false });
    const turnId = await startTurn(local.session, 'go');
    const outcome = local.session.waitForTurn(turnId);
    await started;
    await local.runtime.shutdown();
    expect(await outcome).toMatchObject({ status: 'failed', code: 'actor_stopped' });
  });

  it('a shutdown parks a turn whose summary call never returns: the call is abandoned, the turn left to go on (issue 26)', async () => {
    const SMALL = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };
    let summaryStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (summaryStarted = resolve));
    const aborted: boolean[] = [];
    const model = scriptedModel(
      [
        { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: 'x'.repeat(8_000) } }] },
        (_request, options) => {
          summaryStarted();
          return new Promise<never>(() => options.signal?.addEventListener('abort', () => aborted.push(true)));
        },
      ],
      { capabilities: SMALL },
    );
    const local = await harness([], { model });
    const turnId = await startTurn(local.session, 'go');
    const outcome = local.session.waitForTurn(turnId);
    await started;
    await local.runtime.shutdown();
    expect(await outcome).toEqual({ status: 'parked' });
    expect(aborted).toEqual([true]);
  });
});
