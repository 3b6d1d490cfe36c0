import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage, StoredMessage } from '../../src/protocol/messages.js';
import type { Plan } from '../../src/protocol/plan.js';
import type { TraceSpan } from '../../src/protocol/trace.js';
import { FencedWriteError, type CompactionRow, type SessionRow, type SessionStorage } from '../../storage/session-storage.js';
import type { ToolAudit } from '../../src/protocol/audit.js';
import { runningSpan, T0 } from '../support/spans.js';
import {
  indexNames,
  installInterruptTrap,
  installRewindTrap,
  migrateOnlyTo,
  postgresTarget,
  removeInterruptTrap,
  removeRewindTrap,
  sqliteFileTarget,
  sqliteMemoryTarget,
  type Connected,
  type ContractTarget,
  type Location,
} from './targets.js';

// Past 2^31 on purpose: int4 would overflow, and node-postgres returns int8 as a string.

const session = (id: string, overrides: Partial<SessionRow> = {}): SessionRow => ({
  id,
  agent: 'coder',
  permissionMode: 'ask',
  workspaceDir: null,
  createdAtMs: T0,
  busyPolicy: 'reject',
  updateSequence: 0,
  ...overrides,
});

const turn = (id: string, sessionId: string, startedAtMs = T0) => ({ id, sessionId, clientRequestId: `req-${id}`, startedAtMs });

const stored = (turnId: string, sessionId: string, sequence: number, message: ChatMessage, id = `${turnId}-${sequence}`): StoredMessage => ({
  id,
  sessionId,
  turnId,
  sequence,
  createdAtMs: T0 + sequence,
  message,
});

const user = (text: string): ChatMessage => ({ role: 'user', kind: 'normal', text });

const span = runningSpan;

const start = (s: TraceSpan) => ({ type: 'start' as const, span: s });

const checkpoint = (id: string, sessionId: string, position: number, overrides: Partial<CompactionRow> = {}): CompactionRow => ({
  id,
  sessionId,
  position,
  boundaryMessageId: `${sessionId}-m${position}`,
  boundarySequence: position * 10,
  summary: `summary of ${id}: "quoted" ✓ \n newline`,
  // Odd positions carry a replay text, even ones none, so both shapes round-trip.
  replayText: position % 2 === 1 ? `replay ${id}` : null,
  createdAtMs: T0 + position,
  rewoundAtMs: null,
  ...overrides,
});

const completed = (finishedAtMs = T0 + 1) => ({ status: 'completed' as const, errorCode: null, errorMessage: null, finalText: 'done', finishedAtMs });

function describeStorageContract(name: string, target: ContractTarget): void {
  describe(name, () => {
    let location: Location;
    let conn: Connected;
    let storage: SessionStorage;

    beforeEach(async () => {
      location = await target.create();
      conn = location.connect();
      storage = conn.storage;
      await storage.migrate();
    });

    afterEach(async () => {
      await storage.close();
      await location.drop();
    });

    async function migrationNames(c: Connected = conn): Promise<string[]> {
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(c.db);
      return rows.map((r) => r.name);
    }

    /** A session with one finished turn, so plans and spans have something to hang on. */
    async function sessionWithTurns(sessionId: string, ...turnIds: string[]): Promise<void> {
      await storage.createSession(session(sessionId));
      for (const [i, id] of turnIds.entries()) {
        await storage.beginTurn(turn(id, sessionId, T0 + i), []);
        await storage.endTurn(id, completed(T0 + i));
      }
    }

    it('round-trips a session and changes its permission mode', async () => {
      const row = session('s1', { permissionMode: 'auto', workspaceDir: '/tmp/ws', createdAtMs: T0 + 7 });
      await storage.createSession(row);
      await storage.createSession(session('s2'));

      expect(await storage.getSession('s1')).toEqual(row);
      expect(await storage.getSession('s2')).toEqual(session('s2'));
      expect(await storage.getSession('missing')).toBeUndefined();
      expect(typeof (await storage.getSession('s1'))?.createdAtMs).toBe('number');

      await storage.setPermissionMode('s1', 'read_only');
      expect((await storage.getSession('s1'))?.permissionMode).toBe('read_only');
      await expect(storage.setPermissionMode('missing', 'auto')).rejects.toThrow();
      await expect(storage.createSession(row)).rejects.toThrow();
    });

    it('stores a child session with its link in the same row, and lists the children of a session oldest first', async () => {
      await sessionWithTurns('p1', 'pt1');
      const link = { sessionId: 'p1', turnId: 'pt1', toolCallId: 'call-1' };
      const second = session('c2', { createdAtMs: T0 + 2, parent: { ...link, toolCallId: 'call-2' } });
      await storage.createSession(second);
      await storage.createSession(session('c1', { createdAtMs: T0 + 1, parent: link }));
      await storage.createSession(session('other'));

      expect(await storage.getSession('c1')).toEqual(session('c1', { createdAtMs: T0 + 1, parent: link }));
      expect(await storage.getSession('p1')).toEqual(session('p1'));
      expect((await storage.listChildSessions('p1')).map((r) => [r.id, r.parent?.toolCallId])).toEqual([
        ['c1', 'call-1'],
        ['c2', 'call-2'],
      ]);
      expect(await storage.listChildSessions('c1')).toEqual([]);
      // Leasing a child reads the same row, link included.
      const acquired = await storage.acquireSession('c2', { ownerId: 'o1', host: 'h', pid: 1, ttlMs: 10_000 });
      expect(acquired.ok && acquired.session.parent).toEqual({ ...link, toolCallId: 'call-2' });
    });

    it('switchAgent changes the agent and stores its note in one fenced transaction', async () => {
      await sessionWithTurns('s1', 't1');
      const fence = await storage.acquireSession('s1', { ownerId: 'o1', host: 'h', pid: 1, ttlMs: 10_000 }).then((r) => (r.ok ? r.fence : -1));
      const note = stored('t1', 's1', 5, { role: 'user', kind: 'agent_note', text: 'now explorer' });
      await storage.switchAgent('s1', 'explorer', note, fence);
      expect((await storage.getSession('s1'))?.agent).toBe('explorer');
      expect(await storage.listMessages('s1')).toEqual([note]);

      // A stale token changes nothing, neither the agent nor the conversation.
      const later = stored('t1', 's1', 6, { role: 'user', kind: 'agent_note', text: 'back' });
      await expect(storage.switchAgent('s1', 'coder', later, fence - 1)).rejects.toBeInstanceOf(FencedWriteError);
      expect((await storage.getSession('s1'))?.agent).toBe('explorer');
      // A note on a taken sequence rolls the agent back with it.
      await expect(storage.switchAgent('s1', 'coder', stored('t1', 's1', 5, user('dup'), 'dup'), fence)).rejects.toThrow();
      expect((await storage.getSession('s1'))?.agent).toBe('explorer');
      await storage.switchAgent('s1', 'coder', null, fence);
      expect((await storage.getSession('s1'))?.agent).toBe('coder');
      await expect(storage.switchAgent('missing', 'coder', null)).rejects.toThrow();
    });

    it('beginTurn writes the running turn and its messages', async () => {
      await storage.createSession(session('s1'));
      await storage.beginTurn(turn('t1', 's1'), [stored('t1', 's1', 0, user('hi')), stored('t1', 's1', 1, user('there'))]);

      expect(await storage.getTurn('t1')).toEqual({
        id: 't1',
        sessionId: 's1',
        clientRequestId: 'req-t1',
        status: 'running',
        errorCode: null,
        errorMessage: null,
        finalText: null,
        startedAtMs: T0,
        finishedAtMs: null,
        runId: null,
        trigger: null,
      });
      expect((await storage.listMessages('s1')).map((m) => m.sequence)).toEqual([0, 1]);
      expect(await storage.getTurn('missing')).toBeUndefined();
    });

    it('beginTurn is atomic: a duplicate sequence leaves neither the turn nor any message', async () => {
      await sessionWithTurns('s1', 't1');
      await storage.appendMessage(stored('t1', 's1', 0, user('first')));

      const clash = [stored('t2', 's1', 1, user('new')), stored('t2', 's1', 0, user('clash'), 't2-dup')];
      await expect(storage.beginTurn(turn('t2', 's1', T0 + 5), clash)).rejects.toThrow();

      expect(await storage.getTurn('t2')).toBeUndefined();
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t1-0']);
      // Nothing half-written blocks a clean retry.
      await storage.beginTurn(turn('t2', 's1', T0 + 5), [stored('t2', 's1', 1, user('new'))]);
      expect((await storage.getTurn('t2'))?.status).toBe('running');
    });

    it('beginTurn rejects a turn for an unknown session', async () => {
      await expect(storage.beginTurn(turn('t1', 'ghost'), [])).rejects.toThrow();
      expect(await storage.getTurn('t1')).toBeUndefined();
    });

    it('allows one running turn per session, enforced by uq_turns_one_running_per_session', async () => {
      expect(await indexNames(conn.db, target.dialect, 'turns')).toContain('uq_turns_one_running_per_session');
      await storage.createSession(session('s1'));
      await storage.createSession(session('s2'));
      await storage.beginTurn(turn('t1', 's1'), []);

      await expect(storage.beginTurn(turn('t2', 's1', T0 + 1), [])).rejects.toThrow();
      expect(await storage.getTurn('t2')).toBeUndefined();

      // Another session is independent.
      await storage.beginTurn(turn('t3', 's2'), []);

      // Once the first turn ended, the session may run another.
      await storage.endTurn('t1', completed());
      await storage.beginTurn(turn('t2', 's1', T0 + 1), []);
      expect((await storage.listTurns('s1')).map((t) => [t.id, t.status])).toEqual([
        ['t1', 'completed'],
        ['t2', 'running'],
      ]);
    });

    it('endTurn records the outcome once and lists turns in start order', async () => {
      await storage.createSession(session('s1'));
      await storage.beginTurn(turn('t1', 's1', T0 + 10), []);
      await storage.endTurn('t1', { status: 'failed', errorCode: 'model_error', errorMessage: 'boom', finalText: null, finishedAtMs: T0 + 20 });
      await storage.beginTurn(turn('t0', 's1', T0 + 30), []);

      expect(await storage.getTurn('t1')).toMatchObject({
        status: 'failed',
        errorCode: 'model_error',
        errorMessage: 'boom',
        finalText: null,
        finishedAtMs: T0 + 20,
      });
      expect((await storage.listTurns('s1')).map((t) => t.id)).toEqual(['t1', 't0']);
      expect(await storage.listTurns('other')).toEqual([]);
      await expect(storage.endTurn('t1', completed())).rejects.toThrow();
      await expect(storage.endTurn('missing', completed())).rejects.toThrow();
      expect((await storage.getTurn('t1'))?.status).toBe('failed');
    });

    it('endTurn stores the session’s guardrail trackers with the terminal status; a turn ended without them reads without (GR-2a)', async () => {
      const trackers = { loop: { signature: 'k3.x9', count: 2, recent: ['a.b', 'c.d'], waitTimeouts: 1 }, mistakes: 4 };
      await storage.createSession(session('s1'));
      await storage.beginTurn(turn('t1', 's1', T0 + 10), []);
      await storage.endTurn('t1', { ...completed(T0 + 20), trackers });
      await storage.beginTurn(turn('t2', 's1', T0 + 30), []);
      await storage.endTurn('t2', completed(T0 + 40));
      expect((await storage.getTurn('t1'))?.trackers).toEqual(trackers);
      expect((await storage.listTurns('s1')).map((t) => t.trackers)).toEqual([trackers, undefined]);
      // A value this storage did not write reads as none: the session starts its trackers afresh.
      await sql`update turns set guardrail_trackers = ${'{"loop":"nonsense"}'} where id = 't1'`.execute(conn.db);
      expect((await storage.getTurn('t1'))?.trackers).toBeUndefined();
    });

    it('lists messages by sequence and round-trips every ChatMessage role', async () => {
      const messages: ChatMessage[] = [
        { role: 'user', kind: 'agent_message', text: 'from a peer: "quoted" ✓ \n newline', from: 'planner' },
        {
          role: 'assistant',
          text: 'Reading.',
          reasoning: 'need the file',
          toolCalls: [{ id: 'call-1', name: 'read_file', argumentsText: '{"path":"a.ts"}' }],
        },
        { role: 'tool', toolCallId: 'call-1', toolName: 'read_file', status: 'succeeded', content: 'export {}' },
        { role: 'user', kind: 'world_state', text: 'cwd changed' },
      ];
      await sessionWithTurns('s1', 't1');
      await sessionWithTurns('s2', 'u1');
      // Written out of order on purpose: the read must sort by sequence, not by insertion.
      for (const i of [2, 0, 3, 1]) await storage.appendMessage(stored('t1', 's1', i, messages[i]!));
      await storage.appendMessage(stored('u1', 's2', 0, user('other session')));

      const listed = await storage.listMessages('s1');
      expect(listed).toEqual(messages.map((m, i) => stored('t1', 's1', i, m)));
      expect(listed.every((m) => typeof m.createdAtMs === 'number' && typeof m.sequence === 'number')).toBe(true);
      expect(await storage.listMessages('missing')).toEqual([]);
    });

    it('upserts plans per turn and returns the most recently written one', async () => {
      const plan = (step: string, explanation?: string): Plan => ({
        ...(explanation ? { explanation } : {}),
        plan: [{ step, status: 'in_progress' }, { step: 'later', status: 'pending' }],
      });
      await sessionWithTurns('s1', 't1', 't2');
      await sessionWithTurns('s2', 'u1');
      expect(await storage.latestPlan('s1')).toBeUndefined();

      await storage.savePlan({ turnId: 't1', sessionId: 's1', plan: plan('a', 'why'), updatedAtMs: T0 + 100 });
      await storage.savePlan({ turnId: 't2', sessionId: 's1', plan: plan('b'), updatedAtMs: T0 + 200 });
      await storage.savePlan({ turnId: 'u1', sessionId: 's2', plan: plan('other'), updatedAtMs: T0 + 999 });
      expect(await storage.latestPlan('s1')).toEqual({ turnId: 't2', sessionId: 's1', plan: plan('b'), updatedAtMs: T0 + 200 });

      // Rewriting t1's plan replaces its row and makes it the latest.
      await storage.savePlan({ turnId: 't1', sessionId: 's1', plan: plan('c'), updatedAtMs: T0 + 300 });
      expect(await storage.latestPlan('s1')).toEqual({ turnId: 't1', sessionId: 's1', plan: plan('c'), updatedAtMs: T0 + 300 });
      const rows = await conn.db.selectFrom('turn_plans').select('turn_id').where('session_id', '=', 's1').execute();
      expect(rows.map((r) => r.turn_id).sort()).toEqual(['t1', 't2']);
    });

    it('starts, ends and lists spans; an end without a running span is counted, not raised', async () => {
      await sessionWithTurns('s1', 't1');
      await sessionWithTurns('s2', 'u1');
      expect(
        await storage.writeSpans([
          start(span('sp2', 's1', 't1', { startedAtMs: T0 + 2, kind: 'model_call', source: 'model', name: 'gpt' })),
          start(span('sp1', 's1', 't1', { startedAtMs: T0 + 1 })),
          start(span('other', 's2', 'u1')),
          { type: 'end', spanId: 'sp1', end: { status: 'denied', errorCode: 'permission_denied', endedAtMs: T0 + 5 } },
        ]),
      ).toEqual({ unmatchedEnds: 0 });
      expect(await storage.listSpans('s1')).toEqual([
        span('sp1', 's1', 't1', { startedAtMs: T0 + 1, status: 'denied', errorCode: 'permission_denied', endedAtMs: T0 + 5 }),
        span('sp2', 's1', 't1', { startedAtMs: T0 + 2, kind: 'model_call', source: 'model', name: 'gpt' }),
      ]);
      const again = { type: 'end' as const, spanId: 'sp1', end: { status: 'succeeded' as const, errorCode: null, endedAtMs: T0 + 6 } };
      const missing = { type: 'end' as const, spanId: 'missing', end: { status: 'succeeded' as const, errorCode: null, endedAtMs: T0 } };
      expect(await storage.writeSpans([again, missing])).toEqual({ unmatchedEnds: 2 });
      expect((await storage.listSpans('s1'))[0]).toMatchObject({ status: 'denied', endedAtMs: T0 + 5 });
    });

    it('applies a batch of starts and ends in order, in one write; ends that match nothing are counted', async () => {
      await sessionWithTurns('s1', 't1');
      await storage.writeSpans([start(span('stored', 's1', 't1')), start(span('done', 's1', 't1', { status: 'succeeded', endedAtMs: T0 + 1 }))]);
      const end = (spanId: string, status: 'succeeded' | 'failed', endedAtMs: number, errorCode: string | null = null) => ({
        type: 'end' as const,
        spanId,
        end: { status, errorCode, endedAtMs },
      });
      const result = await storage.writeSpans([
        start(span('here', 's1', 't1', { startedAtMs: T0 + 2 })),
        end('here', 'failed', T0 + 3, 'tool\u0000error'),
        end('here', 'succeeded', T0 + 4), // ended already, within this batch
        end('stored', 'failed', T0 + 5, 'odd\u0000code'),
        end('stored', 'succeeded', T0 + 6), // ended already, by the end before it
        end('done', 'failed', T0 + 7), // stored finished
        end('missing', 'failed', T0 + 8), // never started
        end('late', 'failed', T0 + 9), // its start comes after it
        start(span('late', 's1', 't1', { startedAtMs: T0 + 9 })),
        start(span('open', 's1', 't1', { startedAtMs: T0 + 10 })),
      ]);
      expect(result).toEqual({ unmatchedEnds: 5 });
      const byId = new Map((await storage.listSpans('s1')).map((s) => [s.id, s]));
      expect(byId.get('here')).toEqual(span('here', 's1', 't1', { startedAtMs: T0 + 2, status: 'failed', errorCode: 'tool\u0000error', endedAtMs: T0 + 3 }));
      expect(byId.get('stored')).toEqual(span('stored', 's1', 't1', { status: 'failed', errorCode: 'odd\u0000code', endedAtMs: T0 + 5 }));
      expect(byId.get('done')).toEqual(span('done', 's1', 't1', { status: 'succeeded', endedAtMs: T0 + 1 }));
      expect(byId.get('late')).toEqual(span('late', 's1', 't1', { startedAtMs: T0 + 9 }));
      expect(byId.get('open')).toEqual(span('open', 's1', 't1', { startedAtMs: T0 + 10 }));
      expect(byId.size).toBe(5);
      // Ends alone, several at once: each running span is closed once, the rest counted.
      expect(await storage.writeSpans([end('late', 'succeeded', T0 + 11), end('open', 'succeeded', T0 + 12), end('here', 'succeeded', T0 + 13)])).toEqual({ unmatchedEnds: 1 });
      expect((await storage.listSpans('s1')).filter((s) => s.status === 'running')).toEqual([]);
    });

    it('closes more stored spans in one batch than SQLite allows terms in a compound select (500)', async () => {
      await sessionWithTurns('s1', 't1');
      const ids = Array.from({ length: 600 }, (_, i) => `sp${String(i).padStart(3, '0')}`);
      await storage.writeSpans(ids.map((id) => start(span(id, 's1', 't1'))));
      const ends = ids.map((spanId, i) => ({ type: 'end' as const, spanId, end: { status: 'succeeded' as const, errorCode: null, endedAtMs: T0 + i } }));
      expect(await storage.writeSpans([...ends, { type: 'end', spanId: 'missing', end: { status: 'failed', errorCode: null, endedAtMs: T0 } }])).toEqual({ unmatchedEnds: 1 });
      const spans = await storage.listSpans('s1');
      expect(spans.filter((s) => s.status === 'succeeded').map((s) => s.endedAtMs)).toEqual(ids.map((_, i) => T0 + i));
    });

    it('writes a batch of spans all or nothing', async () => {
      await sessionWithTurns('s1', 't1');
      await storage.writeSpans([start(span('sp1', 's1', 't1'))]);
      await expect(storage.writeSpans([start(span('sp2', 's1', 't1')), start(span('sp1', 's1', 't1'))])).rejects.toThrow();
      expect((await storage.listSpans('s1')).map((s) => s.id)).toEqual(['sp1']);
    });

    describe('correctInterrupted', () => {
      const NOW = T0 + 10_000;

      /** s1: t1 completed, t2 running; s2: u1 running. Spans in both terminal and running states. */
      async function crashedState(): Promise<void> {
        await sessionWithTurns('s1', 't1');
        await storage.createSession(session('s2'));
        await storage.beginTurn(turn('t2', 's1', T0 + 5), []);
        await storage.beginTurn(turn('u1', 's2', T0 + 5), []);
        await storage.writeSpans([start(span('done', 's1', 't1', { status: 'succeeded', endedAtMs: T0 + 1 }))]);
        await storage.writeSpans([start(span('failed', 's1', 't1', { status: 'failed', errorCode: 'tool_error', endedAtMs: T0 + 1 }))]);
        await storage.writeSpans([start(span('live1', 's1', 't2', { startedAtMs: T0 + 6 }))]);
        await storage.writeSpans([start(span('live2', 's2', 'u1', { startedAtMs: T0 + 6 }))]);
      }

      it('turns exactly the running rows into interrupted / outcome_unknown', async () => {
        await crashedState();
        const terminalTurn = await storage.getTurn('t1');
        const terminalSpans = (await storage.listSpans('s1')).filter((s) => s.status !== 'running');

        expect(await storage.correctInterrupted(NOW)).toEqual({ interruptedTurns: 2, unknownSpans: 2 });

        for (const id of ['t2', 'u1']) {
          expect(await storage.getTurn(id)).toMatchObject({ status: 'interrupted', errorCode: 'process_restart', finishedAtMs: NOW });
        }
        expect(await storage.getTurn('t1')).toEqual(terminalTurn);
        const spans = [...(await storage.listSpans('s1')), ...(await storage.listSpans('s2'))];
        for (const s of spans.filter((x) => x.id.startsWith('live'))) {
          expect(s).toMatchObject({ status: 'outcome_unknown', errorCode: 'process_restart', endedAtMs: NOW });
        }
        expect(spans.filter((s) => !s.id.startsWith('live'))).toEqual(terminalSpans);

        expect(await storage.correctInterrupted(NOW + 1)).toEqual({ interruptedTurns: 0, unknownSpans: 0 });
        // The interrupted turn no longer blocks the session.
        await storage.beginTurn(turn('t3', 's1', NOW), []);
      });

      it('is one transaction: a failing turn update rolls back the span update', async () => {
        await crashedState();
        await installInterruptTrap(conn.db, target.dialect);

        await expect(storage.correctInterrupted(NOW)).rejects.toThrow(/trapped interrupt/);
        expect((await storage.listSpans('s1')).find((s) => s.id === 'live1')).toMatchObject({ status: 'running', endedAtMs: null });
        expect((await storage.getTurn('t2'))?.status).toBe('running');

        await removeInterruptTrap(conn.db, target.dialect);
        expect(await storage.correctInterrupted(NOW)).toEqual({ interruptedTurns: 2, unknownSpans: 2 });
      });
    });

    it('appendMessage is idempotent by id: writing an existing id again changes nothing', async () => {
      await sessionWithTurns('s1', 't1');
      const original = stored('t1', 's1', 0, user('original'));
      await storage.appendMessage(original);
      await storage.appendMessage(original);
      await storage.appendMessage({ ...original, createdAtMs: T0 + 99, message: user('rewritten') });

      expect(await storage.listMessages('s1')).toEqual([original]);
      expect(await conn.db.selectFrom('messages').select('id').where('id', '=', original.id).execute()).toHaveLength(1);
      // Only an id conflict is absorbed: another message on a taken sequence still rejects.
      await expect(storage.appendMessage(stored('t1', 's1', 0, user('clash'), 'other-id'))).rejects.toThrow();
      expect(await storage.listMessages('s1')).toEqual([original]);
    });

    describe('tool audit (RL-4)', () => {
      const result = (callId: string, status: 'succeeded' | 'denied' = 'succeeded'): ChatMessage => ({
        role: 'tool',
        toolCallId: callId,
        toolName: 'read_file',
        status,
        content: `result of ${callId}`,
      });
      const audit = (callId: string, overrides: Partial<ToolAudit> = {}): ToolAudit => ({
        toolCallId: callId,
        toolName: 'read_file',
        argumentsHash: 'a'.repeat(64),
        dispatchedArgumentsHash: null,
        verdict: 'allowed',
        decidedBy: 'mode',
        status: 'succeeded',
        errorCode: null,
        permissionWaitMs: null,
        // Past 2^31 too: a bigint column.
        executionMs: 3_000_000_000,
        principal: 'alice',
        ...overrides,
      });
      const entry = (message: StoredMessage, a: ToolAudit) => ({ ...a, id: message.id, sessionId: message.sessionId, turnId: message.turnId, sequence: message.sequence, createdAtMs: message.createdAtMs });

      it('writes a result and its audit row together, reads them newest first in pages, and a retry changes nothing', async () => {
        await sessionWithTurns('s1', 't1');
        await sessionWithTurns('s2', 't2');
        const rows = [
          [stored('t1', 's1', 1, result('c1')), audit('c1')],
          // Issue 25: a session without an owner; an approval another principal (an admin) answered.
          [stored('t1', 's1', 2, result('c2', 'denied')), audit('c2', { verdict: 'denied', decidedBy: 'hook', status: 'denied', executionMs: null, principal: null })],
          [stored('t1', 's1', 3, result('c\u0000odd')), audit('c\u0000odd', { toolName: 'x\u0000y', dispatchedArgumentsHash: 'b'.repeat(64), decidedBy: 'user', permissionWaitMs: 12, principal: 'root-admin' })],
        ] as const;
        for (const [message, a] of rows) await storage.appendMessage(message, undefined, a);
        await storage.appendMessage(stored('t2', 's2', 1, result('other')), undefined, audit('other'));
        // Retried with the same message id: neither the message nor its row is written twice.
        await storage.appendMessage(rows[0][0], undefined, rows[0][1]);

        const all = rows.map(([m, a]) => entry(m, a)).reverse();
        expect(await storage.listAudit('s1', { limit: 10 })).toEqual(all);
        expect(await storage.listAudit('s1', { limit: 2 })).toEqual(all.slice(0, 2));
        expect(await storage.listAudit('s1', { limit: 2, before: 2 })).toEqual(all.slice(2));
        expect(await storage.listAudit('missing', { limit: 2 })).toEqual([]);
        expect((await storage.listMessages('s1')).filter((m) => m.message.role === 'tool')).toHaveLength(3);
        // Messages without an audit (every other kind) are no audit rows.
        await storage.appendMessage(stored('t1', 's1', 4, user('not audited')));
        expect(await storage.listAudit('s1', { limit: 10 })).toEqual(all);
      });

      it('writes neither when the message is refused (a taken sequence) or the fence has moved on', async () => {
        await sessionWithTurns('s1', 't1');
        await storage.appendMessage(stored('t1', 's1', 1, result('c1')), undefined, audit('c1'));
        await expect(storage.appendMessage(stored('t1', 's1', 1, result('c2'), 'clash'), undefined, audit('c2'))).rejects.toThrow();
        await expect(storage.appendMessage(stored('t1', 's1', 2, result('c3')), 99, audit('c3'))).rejects.toBeInstanceOf(FencedWriteError);
        expect((await storage.listAudit('s1', { limit: 10 })).map((e) => e.toolCallId)).toEqual(['c1']);
        expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t1-1']);
      });

      it('reads an audit row written before migration 008 with no principal (issue 25)', async () => {
        const old = await target.create();
        const oldConn = old.connect();
        const s = oldConn.storage;
        try {
          await migrateOnlyTo(oldConn, '007_guardrail_trackers');
          await sql`insert into sessions (id, agent, permission_mode, workspace_dir, created_at_ms) values ('s1', 'coder', 'ask', null, ${T0})`.execute(oldConn.db);
          await sql`insert into turns (id, session_id, client_request_id, status, error_code, error_message, final_text, started_at_ms, finished_at_ms)
                    values ('t1', 's1', 'req-t1', 'completed', null, null, 'done', ${T0}, ${T0 + 1})`.execute(oldConn.db);
          // As the old release wrote a tool result: its audit columns, but no audit_principal.
          const before = stored('t1', 's1', 1, result('c1'));
          await sql`insert into messages (id, session_id, turn_id, sequence, role, kind, content, created_at_ms,
                      audit_tool_call_id, audit_tool_name, audit_status, audit_arguments_hash, audit_verdict, audit_decided_by, audit_execution_ms)
                    values (${before.id}, 's1', 't1', 1, 'tool', 'normal', ${JSON.stringify(before.message)}, ${before.createdAtMs},
                      'c1', 'read_file', 'succeeded', ${'a'.repeat(64)}, 'allowed', 'mode', 7)`.execute(oldConn.db);

          await s.migrate();
          const after = stored('t1', 's1', 2, result('c2'));
          await s.appendMessage(after, undefined, audit('c2', { decidedBy: 'user', principal: 'root-admin' }));
          expect(await s.listAudit('s1', { limit: 10 })).toEqual([
            entry(after, audit('c2', { decidedBy: 'user', principal: 'root-admin' })),
            entry(before, audit('c1', { executionMs: 7, principal: null })),
          ]);
        } finally {
          await s.close();
          await old.drop();
        }
      });
    });

    describe('compactions', () => {
      const NOW = T0 + 50_000;

      /** s1: checkpoints c1, c2, c3; s2: o1, o2. None rewound. */
      async function checkpoints(): Promise<void> {
        await storage.createSession(session('s1'));
        await storage.createSession(session('s2'));
        for (const [id, position] of [['c1', 1], ['c2', 2], ['c3', 3]] as const) await storage.saveCompaction(checkpoint(id, 's1', position));
        for (const [id, position] of [['o1', 1], ['o2', 2]] as const) await storage.saveCompaction(checkpoint(id, 's2', position));
      }

      const rewoundAt = async (sessionId: string) => (await storage.listCompactions(sessionId)).map((c) => [c.id, c.rewoundAtMs]);

      it('round-trips checkpoints, listed by position', async () => {
        expect(await indexNames(conn.db, target.dialect, 'compactions')).toContain('ix_compactions_session');
        await storage.createSession(session('s1'));
        await storage.createSession(session('s2'));
        expect(await storage.listCompactions('s1')).toEqual([]);
        expect(await storage.activeCompaction('s1')).toBeUndefined();

        // Saved out of order on purpose: the list sorts by position, not by insertion.
        const [c1, c2, other] = [checkpoint('c1', 's1', 1), checkpoint('c2', 's1', 2), checkpoint('o1', 's2', 1)];
        for (const c of [c2, other, c1]) await storage.saveCompaction(c);

        const listed = await storage.listCompactions('s1');
        expect(listed).toEqual([c1, c2]);
        expect(listed.every((c) => [c.position, c.boundarySequence, c.createdAtMs].every((n) => typeof n === 'number'))).toBe(true);
        expect(await storage.activeCompaction('s1')).toEqual(c2);
        expect(await storage.listCompactions('s2')).toEqual([other]);
        expect(await storage.listCompactions('missing')).toEqual([]);
        expect(await storage.activeCompaction('missing')).toBeUndefined();
      });

      it('keeps positions unique per session and every checkpoint tied to a session', async () => {
        await storage.createSession(session('s1'));
        await storage.createSession(session('s2'));
        await storage.saveCompaction(checkpoint('c1', 's1', 1));

        await expect(storage.saveCompaction(checkpoint('c1-again', 's1', 1))).rejects.toThrow();
        await expect(storage.saveCompaction(checkpoint('c1', 's1', 2))).rejects.toThrow();
        await expect(storage.saveCompaction(checkpoint('ghost', 'nobody', 1))).rejects.toThrow();
        // Another session numbers its own checkpoints.
        await storage.saveCompaction(checkpoint('o1', 's2', 1));

        expect(await storage.listCompactions('s1')).toEqual([checkpoint('c1', 's1', 1)]);
        expect(await storage.listCompactions('s2')).toEqual([checkpoint('o1', 's2', 1)]);
      });

      it('activeCompaction is the highest position not rewound', async () => {
        await storage.createSession(session('s1'));
        await storage.createSession(session('s2'));
        const rewound = checkpoint('c3', 's1', 3, { rewoundAtMs: NOW });
        for (const c of [checkpoint('c1', 's1', 1), rewound, checkpoint('c2', 's1', 2)]) await storage.saveCompaction(c);
        await storage.saveCompaction(checkpoint('o1', 's2', 1, { rewoundAtMs: NOW }));

        expect(await storage.activeCompaction('s1')).toEqual(checkpoint('c2', 's1', 2));
        expect((await storage.listCompactions('s1'))[2]).toEqual(rewound);
        // Every checkpoint rewound: the conversation is built from no checkpoint at all.
        expect(await storage.activeCompaction('s2')).toBeUndefined();
      });

      it('rewindTo makes a checkpoint active and marks every later one rewound, in that session only', async () => {
        await checkpoints();
        const others = await storage.listCompactions('s2');

        await storage.rewindTo('s1', 'c1', NOW);
        expect(await storage.activeCompaction('s1')).toEqual(checkpoint('c1', 's1', 1));
        expect(await rewoundAt('s1')).toEqual([
          ['c1', null],
          ['c2', NOW],
          ['c3', NOW],
        ]);
        expect(await storage.listCompactions('s2')).toEqual(others);
        expect(await storage.activeCompaction('s2')).toEqual(checkpoint('o2', 's2', 2));

        // Rewinding to a later, rewound checkpoint re-activates it; the ones above it are rewound as of now.
        await storage.rewindTo('s1', 'c2', NOW + 1);
        expect(await storage.activeCompaction('s1')).toEqual(checkpoint('c2', 's1', 2));
        expect(await rewoundAt('s1')).toEqual([
          ['c1', null],
          ['c2', null],
          ['c3', NOW + 1],
        ]);

        await storage.rewindTo('s1', 'c3', NOW + 2);
        expect(await storage.listCompactions('s1')).toEqual([1, 2, 3].map((p) => checkpoint(`c${p}`, 's1', p)));
        // Rewinding to the active checkpoint changes nothing.
        await storage.rewindTo('s1', 'c3', NOW + 3);
        expect(await storage.activeCompaction('s1')).toEqual(checkpoint('c3', 's1', 3));
        expect(await storage.listCompactions('s2')).toEqual(others);
      });

      it('rewindTo rejects an id that is not a checkpoint of the session and changes nothing', async () => {
        await checkpoints();
        await storage.rewindTo('s1', 'c1', NOW);
        const before = [await storage.listCompactions('s1'), await storage.listCompactions('s2')];

        await expect(storage.rewindTo('s1', 'missing', NOW + 1)).rejects.toBeInstanceOf(Error);
        await expect(storage.rewindTo('s1', 'o1', NOW + 1)).rejects.toThrow(/o1/);
        await expect(storage.rewindTo('s2', 'c2', NOW + 1)).rejects.toThrow(/c2/);
        await expect(storage.rewindTo('nobody', 'c2', NOW + 1)).rejects.toBeInstanceOf(Error);

        expect([await storage.listCompactions('s1'), await storage.listCompactions('s2')]).toEqual(before);
      });

      it('rewindTo is one transaction: a failing rewound mark rolls back the un-rewind', async () => {
        await checkpoints();
        await storage.rewindTo('s1', 'c1', NOW);
        await installRewindTrap(conn.db, target.dialect);

        await expect(storage.rewindTo('s1', 'c2', NOW + 1)).rejects.toThrow(/trapped rewind/);
        expect(await rewoundAt('s1')).toEqual([
          ['c1', null],
          ['c2', NOW],
          ['c3', NOW],
        ]);
        expect((await storage.activeCompaction('s1'))?.id).toBe('c1');

        await removeRewindTrap(conn.db, target.dialect);
        await storage.rewindTo('s1', 'c2', NOW + 1);
        expect((await storage.activeCompaction('s1'))?.id).toBe('c2');
      });

      it.runIf(target.durable)('keeps checkpoints and rewinds after closing and reconnecting', async () => {
        await checkpoints();
        await storage.rewindTo('s1', 'c2', NOW);
        await storage.close();

        conn = location.connect();
        storage = conn.storage;
        await storage.migrate();
        expect(await storage.listCompactions('s1')).toEqual([
          checkpoint('c1', 's1', 1),
          checkpoint('c2', 's1', 2),
          checkpoint('c3', 's1', 3, { rewoundAtMs: NOW }),
        ]);
        expect(await storage.activeCompaction('s1')).toEqual(checkpoint('c2', 's1', 2));
        expect(await storage.listCompactions('s2')).toEqual([checkpoint('o1', 's2', 1), checkpoint('o2', 's2', 2)]);
      });
    });

    it('migrate() is idempotent and records every migration', async () => {
      await storage.createSession(session('s1'));
      await storage.saveCompaction(checkpoint('c1', 's1', 1));
      await storage.migrate();
      await storage.migrate();
      expect(await storage.getSession('s1')).toEqual(session('s1'));
      expect(await storage.listCompactions('s1')).toEqual([checkpoint('c1', 's1', 1)]);
      expect(await migrationNames()).toEqual(['001_initial', '002_compactions', '003_service', '004_audit', '005_tasks', '006_subagents', '007_guardrail_trackers', '008_principals', '009_quotas', '010_durable_turns', '011_turn_trace_context', '012_tool_attempts']);
    });

    it('migrate() upgrades a database made by 001_initial alone, keeping its data', async () => {
      const old = await target.create();
      const oldConn = old.connect();
      const s = oldConn.storage;
      try {
        await migrateOnlyTo(oldConn, '001_initial');
        expect(await migrationNames(oldConn)).toEqual(['001_initial']);
        // Written as the old release wrote them: its tables have none of the later columns.
        await sql`insert into sessions (id, agent, permission_mode, workspace_dir, created_at_ms) values ('s1', 'coder', 'ask', null, ${T0})`.execute(oldConn.db);
        await sql`insert into turns (id, session_id, client_request_id, status, error_code, error_message, final_text, started_at_ms, finished_at_ms)
                  values ('t1', 's1', 'req-t1', 'completed', null, null, 'done', ${T0}, ${T0 + 1})`.execute(oldConn.db);
        const old0 = stored('t1', 's1', 0, user('from before'));
        await sql`insert into messages (id, session_id, turn_id, sequence, role, kind, content, created_at_ms)
                  values (${old0.id}, 's1', 't1', 0, 'user', 'normal', ${JSON.stringify(old0.message)}, ${old0.createdAtMs})`.execute(oldConn.db);
        // The simulated old release really has no compactions table.
        await expect(s.listCompactions('s1')).rejects.toThrow();

        await s.migrate();
        expect(await migrationNames(oldConn)).toEqual(['001_initial', '002_compactions', '003_service', '004_audit', '005_tasks', '006_subagents', '007_guardrail_trackers', '008_principals', '009_quotas', '010_durable_turns', '011_turn_trace_context', '012_tool_attempts']);
        expect(await s.getSession('s1')).toEqual(session('s1'));
        expect(await s.getTurn('t1')).toMatchObject({ status: 'completed', finalText: 'done' });
        expect((await s.getTurn('t1'))?.trackers).toBeUndefined();
        expect(await s.listMessages('s1')).toEqual([stored('t1', 's1', 0, user('from before'))]);
        expect(await s.listCompactions('s1')).toEqual([]);
        expect(await s.listAudit('s1', { limit: 10 })).toEqual([]);
        const c1 = checkpoint('c1', 's1', 1, { boundaryMessageId: 't1-0', boundarySequence: 0 });
        await s.saveCompaction(c1);
        expect(await s.activeCompaction('s1')).toEqual(c1);
      } finally {
        await s.close();
        await old.drop();
      }
    });

    it.runIf(target.durable)('keeps everything after closing and reconnecting', async () => {
      await storage.createSession(session('s1'));
      await storage.beginTurn(turn('t1', 's1'), [stored('t1', 's1', 0, user('persist me'))]);
      await storage.writeSpans([start(span('sp1', 's1', 't1'))]);
      await storage.close();

      conn = location.connect();
      storage = conn.storage;
      await storage.migrate();
      expect(await storage.getSession('s1')).toEqual(session('s1'));
      expect((await storage.getTurn('t1'))?.status).toBe('running');
      expect(await storage.listMessages('s1')).toEqual([stored('t1', 's1', 0, user('persist me'))]);
      expect(await storage.listSpans('s1')).toEqual([span('sp1', 's1', 't1')]);
    });
  });
}

describeStorageContract('SQLite :memory:', sqliteMemoryTarget);
describeStorageContract('SQLite file', sqliteFileTarget);

const url = process.env.TEST_DATABASE_URL;
if (!url) console.log('PostgreSQL storage contract skipped: set TEST_DATABASE_URL to run it');
describe.skipIf(!url)('PostgreSQL', () => {
  describeStorageContract('PostgreSQL', postgresTarget(url ?? ''));
});
