import { Migrator, sql, type Kysely, type Selectable } from 'kysely';
import type { ChatMessage, StoredMessage } from '../src/protocol/messages.js';
import type { StoredTurnStatus } from '../src/protocol/outcome.js';
import type { Plan } from '../src/protocol/plan.js';
import type { SpanKind, SpanSource, SpanStatus, TraceSpan } from '../src/protocol/trace.js';
import { compactionToRow, rowToCompaction } from './compaction-rows.js';
import { migrationProvider } from './migrations/index.js';
import { toMs, type Database, type MessagesTable, type TraceSpansTable, type TurnsTable } from './schema.js';
import type {
  CompactionRow,
  CorrectionReport,
  PermissionMode,
  PlanRow,
  SessionRow,
  SessionStorage,
  SpanEnd,
  SpanWrite,
  TurnEnd,
  TurnRow,
} from './session-storage.js';

export interface KyselyStorageOptions {
  /** PostgreSQL only: the schema holding the tables and the migration bookkeeping. */
  schema?: string;
  /** PostgreSQL only: migrate under the server-wide advisory lock `MIGRATION_LOCK_KEY`. */
  advisoryLock?: boolean;
}

/** The advisory lock migrations hold; anything that drops schemas on a shared server should take it too. */
export const MIGRATION_LOCK_KEY = 7_215_200_101;

/**
 * Runs `work` on one PostgreSQL connection holding the migration lock. Kysely's migrator introspects
 * every schema of the server, and a schema dropped meanwhile by another process breaks that query.
 */
export async function withMigrationLock(db: Kysely<Database>, work: (connection: Kysely<Database>) => Promise<void>): Promise<void> {
  await db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(connection);
    try {
      await work(connection);
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(connection);
    }
  });
}

/** Written once for both dialects; everything dialect-specific lives in the connection setup. */
export class KyselySessionStorage implements SessionStorage {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: KyselyStorageOptions = {},
  ) {}

  async migrate(): Promise<void> {
    if (!this.options.advisoryLock) return this.migrateWith(this.db);
    await withMigrationLock(this.db, (connection) => this.migrateWith(connection));
  }

  private async migrateWith(db: Kysely<Database>): Promise<void> {
    const { schema } = this.options;
    if (schema) await db.schema.createSchema(schema).ifNotExists().execute();
    const migrator = new Migrator({
      db,
      provider: migrationProvider,
      ...(schema ? { migrationTableSchema: schema } : {}),
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`);
  }

  async createSession(row: SessionRow): Promise<void> {
    await this.db
      .insertInto('sessions')
      .values({
        id: row.id,
        agent: row.agent,
        permission_mode: row.permissionMode,
        workspace_dir: row.workspaceDir,
        created_at_ms: row.createdAtMs,
      })
      .execute();
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const row = await this.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return (
      row && {
        id: row.id,
        agent: row.agent,
        permissionMode: row.permission_mode as PermissionMode,
        workspaceDir: row.workspace_dir,
        createdAtMs: toMs(row.created_at_ms),
      }
    );
  }

  async setPermissionMode(sessionId: string, mode: PermissionMode): Promise<void> {
    const result = await this.db.updateTable('sessions').set({ permission_mode: mode }).where('id', '=', sessionId).executeTakeFirst();
    // A silent no-op would let the runtime believe a mode change was persisted.
    if (result.numUpdatedRows === 0n) throw new Error(`setPermissionMode: no session ${sessionId}`);
  }

  async beginTurn(
    turn: { id: string; sessionId: string; clientRequestId: string; startedAtMs: number },
    messages: StoredMessage[],
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('turns')
        .values({
          id: turn.id,
          session_id: turn.sessionId,
          client_request_id: turn.clientRequestId,
          status: 'running',
          error_code: null,
          error_message: null,
          final_text: null,
          started_at_ms: turn.startedAtMs,
          finished_at_ms: null,
        })
        .execute();
      if (messages.length > 0) await trx.insertInto('messages').values(messages.map(messageToRow)).execute();
    });
  }

  async endTurn(turnId: string, end: TurnEnd): Promise<void> {
    const result = await this.db
      .updateTable('turns')
      .set({
        status: end.status,
        error_code: end.errorCode,
        error_message: end.errorMessage,
        final_text: end.finalText,
        finished_at_ms: end.finishedAtMs,
      })
      .where('id', '=', turnId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    // Only a running turn can end; anything else means the caller's view of the turn is wrong.
    if (result.numUpdatedRows === 0n) throw new Error(`endTurn: no running turn ${turnId}`);
  }

  async getTurn(turnId: string): Promise<TurnRow | undefined> {
    const row = await this.db.selectFrom('turns').selectAll().where('id', '=', turnId).executeTakeFirst();
    return row && rowToTurn(row);
  }

  async listTurns(sessionId: string): Promise<TurnRow[]> {
    const rows = await this.db
      .selectFrom('turns')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('started_at_ms')
      .orderBy('id')
      .execute();
    return rows.map(rowToTurn);
  }

  async appendMessage(message: StoredMessage): Promise<void> {
    // Only an id conflict is absorbed: a different message on a taken sequence still rejects.
    await this.db
      .insertInto('messages')
      .values(messageToRow(message))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  async listMessages(sessionId: string): Promise<StoredMessage[]> {
    const rows = await this.db.selectFrom('messages').selectAll().where('session_id', '=', sessionId).orderBy('sequence').execute();
    return rows.map(rowToMessage);
  }

  async savePlan(row: PlanRow): Promise<void> {
    const plan = JSON.stringify(row.plan);
    await this.db
      .insertInto('turn_plans')
      .values({ turn_id: row.turnId, session_id: row.sessionId, plan, updated_at_ms: row.updatedAtMs })
      .onConflict((oc) => oc.column('turn_id').doUpdateSet({ plan, updated_at_ms: row.updatedAtMs }))
      .execute();
  }

  async latestPlan(sessionId: string): Promise<PlanRow | undefined> {
    // Equal timestamps have no portable tiebreak by write order; turn_id just keeps the answer stable.
    const row = await this.db
      .selectFrom('turn_plans')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('updated_at_ms', 'desc')
      .orderBy('turn_id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return (
      row && {
        turnId: row.turn_id,
        sessionId: row.session_id,
        plan: JSON.parse(row.plan) as Plan,
        updatedAtMs: toMs(row.updated_at_ms),
      }
    );
  }

  async writeSpans(writes: SpanWrite[]): Promise<{ unmatchedEnds: number }> {
    const apply = async (db: Kysely<Database>) => {
      const starts = writes.flatMap((w) => (w.type === 'start' ? [spanToRow(w.span)] : []));
      // An end always refers to a span started before it, so all starts can go in one statement first.
      if (starts.length > 0) await db.insertInto('trace_spans').values(starts).execute();
      let unmatchedEnds = 0;
      for (const write of writes) if (write.type === 'end' && !(await endSpan(db, write.spanId, write.end))) unmatchedEnds += 1;
      return { unmatchedEnds };
    };
    // A single statement needs no transaction; a batch is all or nothing.
    const statements = writes.filter((w) => w.type === 'end').length + (writes.some((w) => w.type === 'start') ? 1 : 0);
    return statements <= 1 ? apply(this.db) : this.db.transaction().execute(apply);
  }

  async listSpans(sessionId: string): Promise<TraceSpan[]> {
    const rows = await this.db
      .selectFrom('trace_spans')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('started_at_ms')
      .orderBy('id')
      .execute();
    return rows.map(rowToSpan);
  }

  async saveCompaction(row: CompactionRow): Promise<void> {
    await this.db.insertInto('compactions').values(compactionToRow(row)).execute();
  }

  async listCompactions(sessionId: string): Promise<CompactionRow[]> {
    const rows = await this.db.selectFrom('compactions').selectAll().where('session_id', '=', sessionId).orderBy('position').execute();
    return rows.map(rowToCompaction);
  }

  async activeCompaction(sessionId: string): Promise<CompactionRow | undefined> {
    const row = await this.db
      .selectFrom('compactions')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('rewound_at_ms', 'is', null)
      .orderBy('position', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && rowToCompaction(row);
  }

  async rewindTo(sessionId: string, compactionId: string, nowMs: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      // Un-rewinding the target first also finds its position and, on PostgreSQL, locks its row.
      const target = await trx
        .updateTable('compactions')
        .set({ rewound_at_ms: null })
        .where('id', '=', compactionId)
        .where('session_id', '=', sessionId)
        .returning('position')
        .executeTakeFirst();
      if (!target) throw new Error(`rewindTo: no compaction ${compactionId} in session ${sessionId}`);
      await trx
        .updateTable('compactions')
        .set({ rewound_at_ms: nowMs })
        .where('session_id', '=', sessionId)
        .where('position', '>', target.position)
        .execute();
    });
  }

  async correctInterrupted(nowMs: number): Promise<CorrectionReport> {
    return this.db.transaction().execute(async (trx) => {
      const spans = await trx
        .updateTable('trace_spans')
        .set({ status: 'outcome_unknown', error_code: 'process_restart', ended_at_ms: nowMs })
        .where('status', '=', 'running')
        .executeTakeFirst();
      const turns = await trx
        .updateTable('turns')
        .set({ status: 'interrupted', error_code: 'process_restart', finished_at_ms: nowMs })
        .where('status', '=', 'running')
        .executeTakeFirst();
      return { interruptedTurns: Number(turns.numUpdatedRows), unknownSpans: Number(spans.numUpdatedRows) };
    });
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

function messageToRow(m: StoredMessage) {
  return {
    id: m.id,
    session_id: m.sessionId,
    turn_id: m.turnId,
    sequence: m.sequence,
    role: m.message.role,
    // Only user messages carry a kind; the column exists so history can be filtered without parsing JSON.
    kind: m.message.role === 'user' ? m.message.kind : 'normal',
    content: JSON.stringify(m.message),
    created_at_ms: m.createdAtMs,
  };
}

function rowToMessage(row: Selectable<MessagesTable>): StoredMessage {
  return {
    id: row.id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    sequence: Number(row.sequence),
    createdAtMs: toMs(row.created_at_ms),
    message: JSON.parse(row.content) as ChatMessage,
  };
}

// The casts below trust that every status in the table was written through this class.
function rowToTurn(row: Selectable<TurnsTable>): TurnRow {
  return {
    id: row.id,
    sessionId: row.session_id,
    clientRequestId: row.client_request_id,
    status: row.status as StoredTurnStatus,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    finalText: row.final_text,
    startedAtMs: toMs(row.started_at_ms),
    finishedAtMs: toMs(row.finished_at_ms),
  };
}

function rowToSpan(row: Selectable<TraceSpansTable>): TraceSpan {
  return {
    id: row.id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    kind: row.kind as SpanKind,
    name: row.name,
    source: row.source as SpanSource,
    status: row.status as SpanStatus,
    errorCode: row.error_code,
    startedAtMs: toMs(row.started_at_ms),
    endedAtMs: toMs(row.ended_at_ms),
  };
}

/** Closes a running span; false when there was none (its start was never written). */
async function endSpan(db: Kysely<Database>, spanId: string, end: SpanEnd): Promise<boolean> {
  const result = await db
    .updateTable('trace_spans')
    .set({ status: end.status, error_code: end.errorCode, ended_at_ms: end.endedAtMs })
    .where('id', '=', spanId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

function spanToRow(span: TraceSpan) {
  return {
    id: span.id,
    session_id: span.sessionId,
    turn_id: span.turnId,
    kind: span.kind,
    name: span.name,
    source: span.source,
    status: span.status,
    error_code: span.errorCode,
    started_at_ms: span.startedAtMs,
    ended_at_ms: span.endedAtMs,
  };
}
