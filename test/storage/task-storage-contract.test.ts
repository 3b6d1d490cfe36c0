import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KyselyTaskStorage } from '../../storage/kysely-task-storage.js';
import { FencedWriteError, type LeaseRequest, type SessionStorage } from '../../storage/session-storage.js';
import { TaskStateConflict, type NewTaskEvent, type TaskStorage } from '../../storage/task-storage.js';
import { taskSpecSchema } from '../../src/protocol/task-spec.js';
import { migrateOnlyTo, postgresTarget, sqliteFileTarget, sqliteMemoryTarget, type Connected, type ContractTarget, type Location } from './targets.js';

const T0 = 1_700_000_000_000;
const spec = (taskId: string) => taskSpecSchema.parse({ taskId, prompts: ['first', 'second'], metadata: { team: 'ops' } });
const event = (n: number, eventType = 'progress'): NewTaskEvent => ({ messageId: `m-${n}-${Math.random()}`, eventType, data: { n, text: 'ünïcode ✓' }, createdAtMs: T0 + n });
const lease = (ownerId: string): LeaseRequest => ({ ownerId, host: 'test-host', pid: 424242, ttlMs: 60_000 });

function describeTaskStorage(name: string, target: ContractTarget): void {
  describe(`${name}: tasks, their events (the outbox) and consumer positions`, () => {
    let location: Location;
    let conn: Connected;
    let sessions: SessionStorage;
    let tasks: TaskStorage;
    const open = (c: Connected) => new KyselyTaskStorage(c.db, { dialect: target.dialect, ...(c.schema && { schema: c.schema, advisoryLock: true }) });

    beforeEach(async () => {
      location = await target.create();
      conn = location.connect();
      sessions = conn.storage;
      tasks = open(conn);
      await tasks.migrate();
    });
    afterEach(async () => {
      await sessions.close();
      await location.drop();
    });

    it('creates a task once: the same id again returns the stored one unchanged', async () => {
      const first = await tasks.createTask('task-1', spec('task-1'), T0);
      expect(first.created).toBe(true);
      expect(first.task).toMatchObject({ id: 'task-1', state: 'PENDING', reason: 'submitted', turnsDone: 0, eventSequence: 0, controlSeq: 0, agentSessionId: null, createdAtMs: T0 });
      expect(first.task.spec).toEqual(spec('task-1'));
      const again = await tasks.createTask('task-1', { ...spec('task-1'), prompts: ['other'] }, T0 + 5);
      expect(again).toEqual({ created: false, task: first.task });
      expect(await tasks.getTask('nope')).toBeUndefined();
      await tasks.createTask('task-2', spec('task-2'), T0 + 1);
      expect((await tasks.listTasks(10)).map((t) => t.id)).toEqual(['task-2', 'task-1']);
    });

    it('lets one agent session claim a task; a second claim finds the first', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      await sessions.createSession({ id: 's-a', agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0 });
      await sessions.createSession({ id: 's-b', agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0 });
      expect((await tasks.claimTask('task-1', 's-a', T0))?.agentSessionId).toBe('s-a');
      expect((await tasks.claimTask('task-1', 's-b', T0))?.agentSessionId).toBe('s-a');
      expect(await tasks.claimTask('nope', 's-b', T0)).toBeUndefined();
    });

    it('issues sequences 1, 2, 3 … with the change to the task row in the same transaction, stored unpublished', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      const a = await tasks.appendTaskEvent('task-1', event(1, 'session_created'), { riskLevel: 'R2' });
      const b = await tasks.appendTaskEvent('task-1', event(2, 'state_changed'), { state: 'RUNNING', reason: 'approved', startedAtMs: T0 + 2 });
      const c = await tasks.appendTaskEvent('task-1', event(3, 'checkpoint_created'), { turnsDone: 1, lastCheckpoint: 'ckpt-1' });
      expect([a.sequence, b.sequence, c.sequence]).toEqual([1, 2, 3]);
      expect(await tasks.getTask('task-1')).toMatchObject({ state: 'RUNNING', reason: 'approved', riskLevel: 'R2', turnsDone: 1, lastCheckpoint: 'ckpt-1', startedAtMs: T0 + 2, eventSequence: 3 });
      const stored = await tasks.listTaskEvents('task-1');
      expect(stored).toEqual([a, b, c]);
      expect(stored[0]).toMatchObject({ taskId: 'task-1', eventType: 'session_created', data: { n: 1, text: 'ünïcode ✓' }, publishedAtMs: null });
      expect((await tasks.listTaskEvents('task-1', { afterSequence: 1, upToSequence: 2 })).map((e) => e.sequence)).toEqual([2]);
    });

    it('marks events published; the outbox lists only the unpublished ones stored early enough', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      for (const n of [1, 2, 3]) await tasks.appendTaskEvent('task-1', event(n), null);
      await tasks.markPublished('task-1', [1, 3], T0 + 10);
      expect((await tasks.listUnpublished(T0 + 100, 10)).map((e) => e.sequence)).toEqual([2]);
      expect(await tasks.listUnpublished(T0 + 1, 10)).toEqual([]);
      expect((await tasks.listTaskEvents('task-1'))[0]!.publishedAtMs).toBe(T0 + 10);
    });

    it('reaches exactly one terminal state: a second change of state is refused and nothing is written', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      await tasks.appendTaskEvent('task-1', event(1), { state: 'RUNNING', reason: 'approved' });
      await tasks.appendTaskEvent('task-1', event(2), { state: 'COMPLETED', reason: 'all_turns_completed', finishedAtMs: T0 + 2 });
      const refused = await tasks.appendTaskEvent('task-1', event(3), { state: 'FAILED', reason: 'timeout' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TaskStateConflict);
      expect(refused).toMatchObject({ state: 'COMPLETED' });
      expect(await tasks.getTask('task-1')).toMatchObject({ state: 'COMPLETED', eventSequence: 2, finishedAtMs: T0 + 2 });
      // Events after the end (session_closed) still go in.
      expect((await tasks.appendTaskEvent('task-1', event(3, 'session_closed'), null)).sequence).toBe(3);
    });

    it('fences events by the agent session: a worker that lost the session cannot append', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      const fence = await sessions.createSession({ id: 's1', agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0 }, lease('A'));
      await tasks.appendTaskEvent('task-1', event(1), null, { sessionId: 's1', token: fence });
      await sessions.expireOwner('A');
      const taken = await sessions.acquireSession('s1', lease('B'));
      expect(taken.ok).toBe(true);
      await expect(tasks.appendTaskEvent('task-1', event(2), { state: 'FAILED' }, { sessionId: 's1', token: fence })).rejects.toBeInstanceOf(FencedWriteError);
      expect(await tasks.getTask('task-1')).toMatchObject({ state: 'PENDING', eventSequence: 1 });
    });

    it('records control requests with a number that only grows', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      expect(await tasks.requestControl('task-1', 'pause', T0 + 1)).toMatchObject({ control: 'pause', controlSeq: 1 });
      expect(await tasks.requestControl('task-1', 'resume', T0 + 2)).toMatchObject({ control: 'resume', controlSeq: 2 });
      expect(await tasks.requestControl('nope', 'abort', T0)).toBeUndefined();
    });

    it('keeps each consumer’s position per task session; it never moves back', async () => {
      expect(await tasks.loadPosition('billing', 'task-1')).toBe(0);
      await tasks.savePosition('billing', 'task-1', 5, T0);
      await tasks.savePosition('billing', 'task-1', 3, T0 + 1);
      await tasks.savePosition('audit', 'task-1', 1, T0);
      expect(await tasks.loadPosition('billing', 'task-1')).toBe(5);
      expect(await tasks.loadPosition('audit', 'task-1')).toBe(1);
    });

    it.skipIf(!target.durable)('keeps sequences across a reconnect and never issues one again', async () => {
      await tasks.createTask('task-1', spec('task-1'), T0);
      for (const n of [1, 2]) await tasks.appendTaskEvent('task-1', event(n), null);
      await sessions.close();
      conn = location.connect();
      sessions = conn.storage;
      tasks = open(conn);
      expect((await tasks.appendTaskEvent('task-1', event(3), null)).sequence).toBe(3);
    });

    it('upgrades a database made by 003_service to the task tables', async () => {
      const old = await target.create();
      const oldConn = old.connect();
      try {
        await migrateOnlyTo(oldConn, '003_service');
        const upgraded = open(oldConn);
        await upgraded.migrate();
        expect((await upgraded.createTask('task-1', spec('task-1'), T0)).created).toBe(true);
      } finally {
        await oldConn.storage.close();
        await old.drop();
      }
    });
  });
}

describeTaskStorage('SQLite :memory:', sqliteMemoryTarget);
describeTaskStorage('SQLite file', sqliteFileTarget);

const url = process.env.TEST_DATABASE_URL;
describe.skipIf(!url)('PostgreSQL', () => {
  describeTaskStorage('PostgreSQL', postgresTarget(url ?? ''));
});
