import { sql, type Kysely, type Selectable } from 'kysely';
import type { TaskState } from '../machines/task.machine.js';
import { TASK_TRANSITIONS, TERMINAL_TASK_STATES } from '../machines/task.machine.js';
import type { TaskSpec } from '../src/protocol/task-spec.js';
import { assertFence } from './fencing.js';
import { KyselySessionStorage, type KyselyStorageOptions } from './kysely-storage.js';
import { toMs, type Database, type TaskEventsTable, type TasksTable } from './schema.js';
import { inTransaction } from './transaction.js';
import {
  TaskStateConflict,
  type EventRange,
  type NewTaskEvent,
  type TaskChange,
  type TaskControl,
  type TaskEventRow,
  type TaskFence,
  type TaskRow,
  type TaskStorage,
} from './task-storage.js';

const TERMINAL = [...TERMINAL_TASK_STATES];
const LIVE = (Object.keys(TASK_TRANSITIONS) as TaskState[]).filter((state) => !TERMINAL_TASK_STATES.has(state));

/** Tasks on the same database as the sessions they run in, for both dialects. */
export class KyselyTaskStorage implements TaskStorage {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: KyselyStorageOptions,
  ) {}

  /** The one migration list, run as the session storage runs it. */
  migrate(): Promise<void> {
    return new KyselySessionStorage(this.db, this.options).migrate();
  }

  async createTask(id: string, spec: TaskSpec, nowMs: number, principal?: string): Promise<{ created: boolean; task: TaskRow }> {
    const inserted = await this.db
      .insertInto('tasks')
      .values({ id, spec: JSON.stringify(spec), state: 'PENDING', reason: 'submitted', created_at_ms: nowMs, updated_at_ms: nowMs, principal: principal ?? null })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    const task = await this.getTask(id);
    if (!task) throw new Error(`createTask: task ${id} vanished`);
    return { created: Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0, task };
  }

  async getTask(id: string): Promise<TaskRow | undefined> {
    const row = await this.db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && rowToTask(row);
  }

  async listTasks(limit: number): Promise<TaskRow[]> {
    const rows = await this.db.selectFrom('tasks').selectAll().orderBy('created_at_ms', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(rowToTask);
  }

  async countLiveTasks(): Promise<Partial<Record<TaskState, number>>> {
    // `ix_tasks_state` leads with the state: a range of the index per live state, never the finished history.
    const rows = await this.db
      .selectFrom('tasks')
      .select(['state', (eb) => eb.fn.countAll<number | string | bigint>().as('count')])
      .where('state', 'in', LIVE)
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((row) => [row.state, Number(row.count)])) as Partial<Record<TaskState, number>>;
  }

  async claimTask(id: string, agentSessionId: string, nowMs: number): Promise<TaskRow | undefined> {
    await this.db
      .updateTable('tasks')
      .set({ agent_session_id: agentSessionId, updated_at_ms: nowMs })
      .where('id', '=', id)
      .where('agent_session_id', 'is', null)
      .execute();
    return this.getTask(id);
  }

  async appendTaskEvent(taskId: string, event: NewTaskEvent, change: TaskChange | null, fence?: TaskFence): Promise<TaskEventRow> {
    return inTransaction(this.db, async (trx) => {
      if (fence) await assertFence(trx, this.options.dialect, fence.sessionId, fence.token);
      let update = trx
        .updateTable('tasks')
        .set({ event_sequence: sql<number>`event_sequence + 1`, updated_at_ms: event.createdAtMs, ...changeColumns(change) })
        .where('id', '=', taskId);
      // A task reaches exactly one terminal state: a change of state on a terminal task changes nothing.
      if (change?.state) update = update.where('state', 'not in', TERMINAL);
      const issued = await update.returning(['event_sequence']).executeTakeFirst();
      if (!issued) {
        const task = await trx.selectFrom('tasks').select('state').where('id', '=', taskId).executeTakeFirst();
        if (!task) throw new Error(`appendTaskEvent: no task ${taskId}`);
        throw new TaskStateConflict(taskId, task.state as TaskState);
      }
      const row = {
        task_id: taskId,
        sequence: Number(issued.event_sequence),
        message_id: event.messageId,
        event_type: event.eventType,
        data: JSON.stringify(event.data),
        created_at_ms: event.createdAtMs,
        published_at_ms: null,
      };
      await trx.insertInto('task_events').values(row).execute();
      return rowToEvent(row);
    });
  }

  async markPublished(taskId: string, sequences: number[], nowMs: number): Promise<void> {
    if (sequences.length === 0) return;
    await this.db
      .updateTable('task_events')
      .set({ published_at_ms: nowMs })
      .where('task_id', '=', taskId)
      .where('sequence', 'in', sequences)
      .where('published_at_ms', 'is', null)
      .execute();
  }

  async listTaskEvents(taskId: string, range: EventRange = {}): Promise<TaskEventRow[]> {
    let query = this.db.selectFrom('task_events').selectAll().where('task_id', '=', taskId).orderBy('sequence');
    if (range.afterSequence !== undefined) query = query.where('sequence', '>', range.afterSequence);
    if (range.upToSequence !== undefined) query = query.where('sequence', '<=', range.upToSequence);
    if (range.limit !== undefined) query = query.limit(range.limit);
    return (await query.execute()).map(rowToEvent);
  }

  async listUnpublished(createdBeforeMs: number, limit: number): Promise<TaskEventRow[]> {
    const rows = await this.db
      .selectFrom('task_events')
      .selectAll()
      .where('published_at_ms', 'is', null)
      .where('created_at_ms', '<=', createdBeforeMs)
      .orderBy('created_at_ms')
      .orderBy('task_id')
      .orderBy('sequence')
      .limit(limit)
      .execute();
    return rows.map(rowToEvent);
  }

  async requestControl(taskId: string, control: TaskControl, nowMs: number): Promise<TaskRow | undefined> {
    await this.db
      .updateTable('tasks')
      .set({ control, control_seq: sql<number>`control_seq + 1`, updated_at_ms: nowMs })
      .where('id', '=', taskId)
      .execute();
    return this.getTask(taskId);
  }

  async loadPosition(consumerId: string, sessionId: string): Promise<number> {
    const row = await this.db
      .selectFrom('task_consumer_positions')
      .select('last_sequence')
      .where('consumer_id', '=', consumerId)
      .where('session_id', '=', sessionId)
      .executeTakeFirst();
    return row ? Number(row.last_sequence) : 0;
  }

  async savePosition(consumerId: string, sessionId: string, sequence: number, nowMs: number): Promise<void> {
    await this.db
      .insertInto('task_consumer_positions')
      .values({ consumer_id: consumerId, session_id: sessionId, last_sequence: sequence, updated_at_ms: nowMs })
      .onConflict((oc) =>
        oc.columns(['consumer_id', 'session_id']).doUpdateSet({
          last_sequence: sql<number>`case when task_consumer_positions.last_sequence < excluded.last_sequence then excluded.last_sequence else task_consumer_positions.last_sequence end`,
          updated_at_ms: nowMs,
        }),
      )
      .execute();
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

function changeColumns(change: TaskChange | null) {
  if (!change) return {};
  return {
    ...(change.state !== undefined && { state: change.state }),
    ...(change.reason !== undefined && { reason: change.reason }),
    ...(change.riskLevel !== undefined && { risk_level: change.riskLevel }),
    ...(change.turnsDone !== undefined && { turns_done: change.turnsDone }),
    ...(change.lastCheckpoint !== undefined && { last_checkpoint: change.lastCheckpoint }),
    ...(change.startedAtMs !== undefined && { started_at_ms: change.startedAtMs }),
    ...(change.finishedAtMs !== undefined && { finished_at_ms: change.finishedAtMs }),
  };
}

function rowToTask(row: Selectable<TasksTable>): TaskRow {
  return {
    id: row.id,
    spec: JSON.parse(row.spec) as TaskSpec,
    state: row.state as TaskState,
    reason: row.reason,
    riskLevel: row.risk_level,
    agentSessionId: row.agent_session_id,
    turnsDone: Number(row.turns_done),
    lastCheckpoint: row.last_checkpoint,
    control: row.control as TaskControl | null,
    controlSeq: Number(row.control_seq),
    eventSequence: Number(row.event_sequence),
    createdAtMs: toMs(row.created_at_ms),
    updatedAtMs: toMs(row.updated_at_ms),
    startedAtMs: toMs(row.started_at_ms),
    finishedAtMs: toMs(row.finished_at_ms),
    ...(row.principal !== null && row.principal !== undefined && { principal: row.principal }),
  };
}

function rowToEvent(row: Selectable<TaskEventsTable>): TaskEventRow {
  return {
    taskId: row.task_id,
    sequence: Number(row.sequence),
    messageId: row.message_id,
    eventType: row.event_type,
    data: JSON.parse(row.data) as Record<string, unknown>,
    createdAtMs: toMs(row.created_at_ms),
    publishedAtMs: toMs(row.published_at_ms),
  };
}
