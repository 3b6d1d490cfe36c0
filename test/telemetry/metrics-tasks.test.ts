import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KyselyTaskStorage } from '../../storage/kysely-task-storage.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import { taskSpecSchema } from '../../src/protocol/task-spec.js';
import { TurnchartMetrics } from '../../src/telemetry/metrics.js';
import { readSources } from '../../src/telemetry/metrics-sources.js';
import { parsePrometheusText, samplesOf, valueOf } from '../support/prometheus-text.js';
import { postgresTarget, sqliteFileTarget, type Connected, type ContractTarget, type Location } from '../storage/targets.js';

const T0 = 1_700_000_000_000;
const spec = (taskId: string) => taskSpecSchema.parse({ taskId, prompts: ['go'] });

function describeTaskCounts(name: string, target: ContractTarget): void {
  describe(`turnchart_tasks on ${name} (issue 27)`, () => {
    let location: Location;
    let conn: Connected;
    let tasks: TaskStorage;

    beforeEach(async () => {
      location = await target.create();
      conn = location.connect();
      tasks = new KyselyTaskStorage(conn.db, { dialect: target.dialect, ...(conn.schema && { schema: conn.schema, advisoryLock: true }) });
      await tasks.migrate();
    });
    afterEach(async () => {
      await conn.storage.close();
      await location.drop();
    });

    it('reads the unfinished tasks by state from the database on every scrape; finished ones are left out', async () => {
      const metrics = new TurnchartMetrics();
      readSources(metrics, { tasks });
      const scrape = async () => parsePrometheusText(await metrics.text());
      expect(samplesOf(await scrape(), 'turnchart_tasks')).toEqual([]);

      const states = { a: 'PENDING', b: 'PENDING', c: 'RUNNING', d: 'PAUSED', e: 'COMPLETED', f: 'FAILED' } as const;
      let n = 0;
      for (const [id, state] of Object.entries(states)) {
        await tasks.createTask(id, spec(id), T0);
        if (state === 'PENDING') continue;
        await tasks.appendTaskEvent(id, { messageId: `m${(n += 1)}`, eventType: 'state_changed', data: {}, createdAtMs: T0 + n }, { state: 'RUNNING', reason: 'approved' });
        if (state !== 'RUNNING') await tasks.appendTaskEvent(id, { messageId: `m${(n += 1)}`, eventType: 'state_changed', data: {}, createdAtMs: T0 + n }, { state, reason: 'test' });
      }
      const m = await scrape();
      expect(Object.fromEntries(samplesOf(m, 'turnchart_tasks').map((s) => [s.labels.state, s.value]))).toEqual({ PENDING: 2, RUNNING: 1, PAUSED: 1 });
      expect(m.types.get('turnchart_tasks')).toBe('gauge');

      // A state that empties is gone from the next scrape, not left at its last count.
      await tasks.appendTaskEvent('d', { messageId: 'm-last', eventType: 'state_changed', data: {}, createdAtMs: T0 + 99 }, { state: 'ABORTING', reason: 'test' });
      const after = await scrape();
      expect(Object.fromEntries(samplesOf(after, 'turnchart_tasks').map((s) => [s.labels.state, s.value]))).toEqual({ PENDING: 2, RUNNING: 1, ABORTING: 1 });
      expect(valueOf(after, 'turnchart_storage_errors_total')).toBe(0);
    });

    it('leaves the counts out of a scrape whose query fails, and counts the failure', async () => {
      const metrics = new TurnchartMetrics();
      readSources(metrics, { tasks });
      await tasks.createTask('a', spec('a'), T0);
      expect(valueOf(parsePrometheusText(await metrics.text()), 'turnchart_tasks', { state: 'PENDING' })).toBe(1);
      await conn.storage.close();
      const m = parsePrometheusText(await metrics.text());
      expect(samplesOf(m, 'turnchart_tasks')).toEqual([]);
      expect(valueOf(m, 'turnchart_storage_errors_total', { operation: 'countLiveTasks' })).toBe(1);
    });
  });
}

describeTaskCounts('SQLite file', sqliteFileTarget);

const url = process.env.TEST_DATABASE_URL;
describe.skipIf(!url)('PostgreSQL', () => {
  describeTaskCounts('PostgreSQL', postgresTarget(url ?? ''));
});
