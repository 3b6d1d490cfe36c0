import { Migrator, sql, type Kysely } from 'kysely';
import type { StoredMessage } from '../src/protocol/messages.js';
import type { Plan } from '../src/protocol/plan.js';
import type { AuditEntry, ToolAudit } from '../src/protocol/audit.js';
import { auditColumns, rowToAudit } from './audit-rows.js';
import type { TraceSpan } from '../src/protocol/trace.js';
import { compactionToRow, rowToCompaction } from './compaction-rows.js';
import { databaseNowMs, type DialectName } from './dialect.js';
import { beginTurnInOneStatement, beginTurnInTransaction } from './begin-turn.js';
import { enqueueTurnInOneStatement, enqueueTurnInTransaction } from './enqueue-turn.js';
import { assertFence, fenceHolds, insertWhere, throwIfFenced } from './fencing.js';
import { insertMessageFenced } from './message-insert.js';
import type { GroupCommit } from './group-commit.js';
import { messageGroupCommit, type MessageWrite } from './message-group-commit.js';
import { turnEndGroupCommit, type TurnEndWrite } from './turn-end-group-commit.js';
import { turnBeginGroupCommit, type TurnBeginWrite } from './turn-begin-group-commit.js';
import { KeptStatement } from './kept-statement.js';
import * as leases from './leases.js';
import * as quotas from './quotas.js';
import * as approvals from './approvals.js';
import { migrationProvider } from './migrations/index.js';
import { executeKept } from './prepared-statements.js';
import { encodeText } from './text-codec.js';
import { encodeTrackers } from './trackers-codec.js';
import { inTransaction } from './transaction.js';
import { messageToRow, rowToMessage, rowToQueuedTurn, rowToRun, rowToSession, rowToSpan, rowToTurn } from './rows.js';
import { applySpanPlan, planSpanWrites } from './span-writes.js';
import { toMs, type Database } from './schema.js';
import {
  type ApprovalAnswer,
  type ApprovalRow,
  FencedWriteError,
  type AcquireResult,
  type AuditQuery,
  type CompactionRow,
  type CorrectionReport,
  type LeaseRequest,
  type SessionStanding,
  type MessagePage,
  type PlanRow,
  type QueuedTurnRow,
  type RunPage,
  type RunRow,
  type SessionPage,
  type SessionRow,
  type SessionStorage,
  type SpanWrite,
  type StreamSlot,
  type TurnActivity,
  type TurnEnd,
  type TurnRow,
  type TurnStart,
} from './session-storage.js';
import type { PermissionMode } from '../src/protocol/commands.js';
import type { LeaseHolder, OwnerIdentity } from '../src/protocol/session-owner.js';

export interface KyselyStorageOptions {
  /** Which SQL the few dialect-specific statements speak (database clock, row locks). */
  dialect: DialectName;
  /** PostgreSQL only: the schema holding the tables and the migration bookkeeping. */
  schema?: string;
  /** PostgreSQL only: migrate under the server-wide advisory lock `MIGRATION_LOCK_KEY`. */
  advisoryLock?: boolean;
  /** PostgreSQL only: concurrent sessions' message writes share statements and commits (message-group-commit.ts). */
  groupCommit?: boolean;
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

/** A new session's row, with its first owner's lease when it has one (the fencing token then starts at 1). */
const createSessionStatement = new KeptStatement<{ row: SessionRow; owner: LeaseRequest | undefined }>(
  (db, dialect, { row, owner }) =>
    db
      .insertInto('sessions')
      .values({
        id: row.id,
        agent: row.agent,
        permission_mode: row.permissionMode,
        workspace_dir: row.workspaceDir,
        created_at_ms: row.createdAtMs,
        busy_policy: row.busyPolicy ?? 'reject',
        update_sequence: row.updateSequence ?? 0,
        fencing_token: owner ? 1 : 0,
        ...(row.nonInteractive && { non_interactive: 1 }),
        ...(row.principal && { principal: row.principal }),
        ...(row.quotaExempt && { quota_exempt: 1 }),
        ...(row.resumeTurns && { resume_turns: 1 }),
        ...(row.parent && { parent_session_id: row.parent.sessionId, parent_turn_id: row.parent.turnId, parent_tool_call_id: row.parent.toolCallId }),
        ...(owner && {
          owner_id: owner.ownerId,
          owner_host: owner.host,
          owner_pid: owner.pid,
          lease_expires_at_ms: sql<number>`${databaseNowMs(dialect)} + ${owner.ttlMs}`,
        }),
      })
      .compile(),
  ({ row, owner }) => [
    row.id,
    row.agent,
    row.permissionMode,
    row.workspaceDir,
    row.createdAtMs,
    row.busyPolicy ?? 'reject',
    row.updateSequence ?? 0,
    owner ? 1 : 0,
    ...(row.nonInteractive ? [1] : []),
    ...(row.principal ? [row.principal] : []),
    ...(row.quotaExempt ? [1] : []),
    ...(row.resumeTurns ? [1] : []),
    ...(row.parent ? [row.parent.sessionId, row.parent.turnId, row.parent.toolCallId] : []),
    ...(owner ? [owner.ownerId, owner.host, owner.pid, owner.ttlMs] : []),
  ],
  ({ row, owner }) => `${row.nonInteractive ? 'n' : ''}${row.principal ? 'u' : ''}${row.quotaExempt ? 'x' : ''}${row.resumeTurns ? 'r' : ''}${row.parent ? 'p' : ''}${owner ? 'o' : ''}`,
);

/**
 * A running turn's terminal status, once per turn: kept, since the builder cost more than the update on SQLite.
 * The session's guardrail trackers go into the same row and statement (GR-2a): no extra write per turn.
 */
const endTurnStatement = new KeptStatement<{ turnId: string; end: TurnEnd; fence: number | undefined }>(
  (db, dialect, { turnId, end, fence }) => {
    let query = db
      .updateTable('turns')
      .set({
        status: end.status,
        error_code: end.errorCode,
        error_message: encodeText(end.errorMessage),
        final_text: encodeText(end.finalText),
        finished_at_ms: end.finishedAtMs,
        guardrail_trackers: encodeTrackers(end.trackers),
      })
      .where('id', '=', turnId)
      .where('status', '=', 'running');
    if (fence !== undefined) query = query.where(fenceHolds(dialect, sql.ref('turns.session_id'), fence));
    return query.compile();
  },
  ({ turnId, end, fence }) => {
    const head = [end.status, end.errorCode, encodeText(end.errorMessage), encodeText(end.finalText), end.finishedAtMs, encodeTrackers(end.trackers), turnId, 'running'];
    return fence === undefined ? head : [...head, fence];
  },
  ({ fence }) => (fence === undefined ? 'unfenced' : 'fenced'),
);

/** Written once for both dialects; everything dialect-specific lives in the connection setup. */
export class KyselySessionStorage implements SessionStorage {
  /** Issue 28: null where each write is its own statement (SQLite, whose writes are in-process and synchronous). */
  readonly groupCommits: { turnBegins: GroupCommit<TurnBeginWrite>; messages: GroupCommit<MessageWrite>; turnEnds: GroupCommit<TurnEndWrite> } | null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: KyselyStorageOptions,
  ) {
    this.groupCommits =
      options.dialect === 'postgres' && options.groupCommit !== false
        ? {
            turnBegins: turnBeginGroupCommit(
              db,
              (write) => beginTurnInOneStatement(this.db, write.turn, write.messages, write.fence),
              (write) => Promise.reject(new FencedWriteError(write.turn.sessionId)),
            ),
            messages: messageGroupCommit(
              db,
              (write) => this.insertFenced(write.message, write.fence, write.audit ?? undefined),
              (write) => throwIfFenced(this.db, write.message.sessionId, write.fence),
            ),
            turnEnds: turnEndGroupCommit(
              db,
              (write) => this.endTurnAlone(write.turnId, write.end, write.fence),
              (write) => this.endNotApplied(write.turnId, write.fence),
            ),
          }
        : null;
  }

  private get dialect(): DialectName {
    return this.options.dialect;
  }

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

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async createSession(row: SessionRow, owner?: LeaseRequest): Promise<number> {
    await executeKept(this.db, this.dialect, createSessionStatement.compile(this.db, this.dialect, { row, owner }));
    return owner ? 1 : 0;
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const row = await this.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return row && rowToSession(row);
  }

  async listSessions(page: SessionPage): Promise<SessionRow[]> {
    let query = this.db.selectFrom('sessions').selectAll().orderBy('created_at_ms', 'desc').orderBy('id', 'desc').limit(page.limit);
    if (page.principal !== undefined) query = query.where('principal', '=', page.principal);
    const before = page.before;
    if (before) {
      query = query.where((eb) =>
        eb.or([eb('created_at_ms', '<', before.createdAtMs), eb.and([eb('created_at_ms', '=', before.createdAtMs), eb('id', '<', before.id)])]),
      );
    }
    return (await query.execute()).map(rowToSession);
  }

  async setPermissionMode(sessionId: string, mode: PermissionMode, fence?: number): Promise<void> {
    let query = this.db.updateTable('sessions').set({ permission_mode: mode }).where('id', '=', sessionId);
    if (fence !== undefined) query = query.where('fencing_token', '=', fence);
    const result = await query.executeTakeFirst();
    if (result.numUpdatedRows > 0n) return;
    await throwIfFenced(this.db, sessionId, fence);
    // A silent no-op would let the runtime believe a mode change was persisted.
    throw new Error(`setPermissionMode: no session ${sessionId}`);
  }

  async listChildSessions(parentSessionId: string): Promise<SessionRow[]> {
    const rows = await this.db.selectFrom('sessions').selectAll().where('parent_session_id', '=', parentSessionId).orderBy('created_at_ms').orderBy('id').execute();
    return rows.map(rowToSession);
  }

  async switchAgent(sessionId: string, agent: string, note: StoredMessage | null, fence?: number): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await assertFence(trx, this.dialect, sessionId, fence);
      const result = await trx.updateTable('sessions').set({ agent }).where('id', '=', sessionId).executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw new Error(`switchAgent: no session ${sessionId}`);
      if (note) await trx.insertInto('messages').values(messageToRow(note)).execute();
    });
  }

  acquireSession(sessionId: string, lease: LeaseRequest, reserveSequences = 0): Promise<AcquireResult> {
    return leases.acquireSession(this.db, this.dialect, sessionId, lease, reserveSequences);
  }

  renewLeases(lease: LeaseRequest, sessionIds: string[]): Promise<string[]> {
    return leases.renewLeases(this.db, this.dialect, lease, sessionIds);
  }

  releaseSession(sessionId: string, ownerId: string, lastUpdateSequence: number): Promise<void> {
    return leases.releaseSession(this.db, sessionId, ownerId, lastUpdateSequence);
  }

  liveOwnersOn(host: string): Promise<OwnerIdentity[]> {
    return leases.liveOwnersOn(this.db, this.dialect, host);
  }

  leaseHolder(sessionId: string): Promise<LeaseHolder | null> {
    return leases.leaseHolder(this.db, this.dialect, sessionId);
  }

  sessionStanding(sessionId: string): Promise<SessionStanding | null> {
    return leases.sessionStanding(this.db, this.dialect, sessionId);
  }

  expireOwner(ownerId: string): Promise<void> {
    return leases.expireOwner(this.db, ownerId);
  }

  heldSessionCount(principal: string): Promise<number> {
    return quotas.heldSessionCount(this.db, this.dialect, principal);
  }

  turnActivity(principal: string, sinceMs: number, request?: { sessionId: string; clientRequestId: string }): Promise<TurnActivity> {
    return quotas.turnActivity(this.db, principal, sinceMs, request);
  }

  addPrincipalTokens(principal: string, day: string, tokens: number): Promise<void> {
    return quotas.addPrincipalTokens(this.db, principal, day, tokens);
  }

  principalTokens(principal: string, day: string): Promise<number> {
    return quotas.principalTokens(this.db, principal, day);
  }

  claimStreamSlot(slot: StreamSlot, max: number): Promise<boolean> {
    return quotas.claimStreamSlot(this.db, this.dialect, slot, max);
  }

  releaseStreamSlot(slotId: string): Promise<void> {
    return quotas.releaseStreamSlot(this.db, slotId);
  }

  renewStreamSlots(ownerId: string, ttlMs: number): Promise<void> {
    return quotas.renewStreamSlots(this.db, this.dialect, ownerId, ttlMs);
  }

  releaseStreamSlots(ownerId: string): Promise<void> {
    return quotas.releaseStreamSlots(this.db, ownerId);
  }

  unheldSessionsWithWork(): Promise<string[]> {
    return leases.unheldSessionsWithWork(this.db, this.dialect);
  }

  requestApproval(row: ApprovalRow): Promise<void> {
    return approvals.requestApproval(this.db, row);
  }

  answerApproval(answer: ApprovalAnswer): Promise<void> {
    return approvals.answerApproval(this.db, answer);
  }

  listApprovals(turnId: string): Promise<ApprovalRow[]> {
    return approvals.listApprovals(this.db, turnId);
  }

  startApprovedCall(answer: ApprovalAnswer): Promise<void> {
    return approvals.startApprovedCall(this.db, answer);
  }

  async requestCancel(turnId: string, atMs: number): Promise<void> {
    await this.db.updateTable('turns').set({ cancel_requested_at_ms: atMs }).where('id', '=', turnId).where('status', '=', 'running').execute();
  }

  async reserveUpdateSequence(sessionId: string, upTo: number, fence?: number): Promise<void> {
    let query = this.db
      .updateTable('sessions')
      .set({ update_sequence: sql<number>`case when update_sequence < ${upTo} then ${upTo} else update_sequence end` })
      .where('id', '=', sessionId);
    if (fence !== undefined) query = query.where('fencing_token', '=', fence);
    const result = await query.executeTakeFirst();
    if (result.numUpdatedRows === 0n) await throwIfFenced(this.db, sessionId, fence);
  }

  async beginTurn(turn: TurnStart, messages: StoredMessage[], fence?: number): Promise<void> {
    // PostgreSQL pays a round trip per statement: there the turn is begun by one.
    // A new turn's begin is grouped with other sessions'; one from the queue updates its row alone.
    if (this.groupCommits && fence !== undefined && !turn.fromQueue) return this.groupCommits.turnBegins.write({ turn, messages, fence });
    if (this.dialect === 'postgres') await beginTurnInOneStatement(this.db, turn, messages, fence);
    else await beginTurnInTransaction(this.db, turn, messages, fence);
  }

  async enqueueTurn(turn: QueuedTurnRow, fence?: number): Promise<void> {
    if (this.dialect === 'postgres') await enqueueTurnInOneStatement(this.db, turn, fence);
    else await enqueueTurnInTransaction(this.db, turn, fence);
  }

  async cancelQueuedTurn(turnId: string, finishedAtMs: number, fence?: number): Promise<void> {
    let query = this.db
      .updateTable('turns')
      .set({ status: 'cancelled', finished_at_ms: finishedAtMs, input: null, queue_position: null })
      .where('id', '=', turnId)
      .where('status', '=', 'queued');
    if (fence !== undefined) query = query.where(fenceHolds(this.dialect, sql.ref('turns.session_id'), fence));
    const result = await executeKept(this.db, this.dialect, query.compile());
    if ((result.numAffectedRows ?? 0n) > 0n) return;
    const row = await this.getTurn(turnId);
    if (row) await throwIfFenced(this.db, row.sessionId, fence);
    throw new Error(`cancelQueuedTurn: turn ${turnId} is not queued`);
  }

  async listQueuedTurns(sessionId: string): Promise<QueuedTurnRow[]> {
    const rows = await this.turnsWithRuns().where('turns.session_id', '=', sessionId).where('turns.status', '=', 'queued').orderBy('turns.queue_position').execute();
    return rows.map(rowToQueuedTurn);
  }

  async endTurn(turnId: string, end: TurnEnd, fence?: number): Promise<void> {
    if (this.groupCommits && fence !== undefined) return this.groupCommits.turnEnds.write({ turnId, end, fence });
    await this.endTurnAlone(turnId, end, fence);
  }

  private async endTurnAlone(turnId: string, end: TurnEnd, fence: number | undefined): Promise<void> {
    const result = await executeKept(this.db, this.dialect, endTurnStatement.compile(this.db, this.dialect, { turnId, end, fence }));
    if ((result.numAffectedRows ?? 0n) > 0n) return;
    await this.endNotApplied(turnId, fence);
  }

  /** An end that changed nothing: fenced (FencedWriteError), or no running turn of that id. */
  private async endNotApplied(turnId: string, fence: number | undefined): Promise<never> {
    const row = await this.getTurn(turnId);
    if (row) await throwIfFenced(this.db, row.sessionId, fence);
    // Only a running turn can end; anything else means the caller's view of the turn is wrong.
    throw new Error(`endTurn: no running turn ${turnId}`);
  }

  private turnsWithRuns() {
    return this.db
      .selectFrom('turns')
      .leftJoin('runs', 'runs.turn_id', 'turns.id')
      .selectAll('turns')
      .select(['runs.id as run_id', 'runs.trigger_type']);
  }

  async getTurn(turnId: string): Promise<TurnRow | undefined> {
    const row = await this.turnsWithRuns().where('turns.id', '=', turnId).executeTakeFirst();
    return row && rowToTurn(row);
  }

  async listTurns(sessionId: string): Promise<TurnRow[]> {
    const rows = await this.turnsWithRuns().where('turns.session_id', '=', sessionId).orderBy('turns.started_at_ms').orderBy('turns.id').execute();
    return rows.map(rowToTurn);
  }

  async getRun(runId: string): Promise<RunRow | undefined> {
    const row = await this.runsWithTurns().where('runs.id', '=', runId).executeTakeFirst();
    return row && rowToRun(row);
  }

  async listRuns(sessionId: string, page: RunPage): Promise<RunRow[]> {
    let query = this.runsWithTurns()
      .where('runs.session_id', '=', sessionId)
      .orderBy('runs.created_at_ms', 'desc')
      .orderBy('runs.id', 'desc')
      .limit(page.limit);
    const before = page.before;
    if (before) {
      query = query.where((eb) =>
        eb.or([eb('runs.created_at_ms', '<', before.createdAtMs), eb.and([eb('runs.created_at_ms', '=', before.createdAtMs), eb('runs.id', '<', before.id)])]),
      );
    }
    return (await query.execute()).map(rowToRun);
  }

  private runsWithTurns() {
    return this.db
      .selectFrom('runs')
      .innerJoin('turns', 'turns.id', 'runs.turn_id')
      .selectAll('turns')
      .select(['runs.id as run_id', 'runs.trigger_type', 'runs.created_at_ms as run_created_at_ms']);
  }

  async appendMessage(message: StoredMessage, fence?: number, audit?: ToolAudit): Promise<void> {
    // A tool result's audit goes into the same row: result and audit are one statement (RL-4).
    // Only an id conflict is absorbed: a different message on a taken sequence still rejects.
    if (fence === undefined) {
      const row = audit ? { ...messageToRow(message), ...auditColumns(audit) } : messageToRow(message);
      await this.db.insertInto('messages').values(row).onConflict((oc) => oc.column('id').doNothing()).execute();
      return;
    }
    if (this.groupCommits) return this.groupCommits.messages.write({ message, fence, audit: audit ?? null });
    await this.insertFenced(message, fence, audit);
  }

  private async insertFenced(message: StoredMessage, fence: number, audit?: ToolAudit): Promise<void> {
    const result = await insertMessageFenced(this.db, this.dialect, message, fence, audit);
    if (!result.numAffectedRows) await throwIfFenced(this.db, message.sessionId, fence);
  }

  async listAudit(sessionId: string, page: AuditQuery): Promise<AuditEntry[]> {
    let query = this.db.selectFrom('tool_audit').selectAll().where('session_id', '=', sessionId).orderBy('sequence', 'desc').limit(page.limit);
    if (page.before !== undefined) query = query.where('sequence', '<', page.before);
    return (await query.execute()).map(rowToAudit);
  }

  async listMessages(sessionId: string, page: MessagePage = {}): Promise<StoredMessage[]> {
    let query = this.db.selectFrom('messages').selectAll().where('session_id', '=', sessionId).orderBy('sequence');
    if (page.afterSequence !== undefined) query = query.where('sequence', '>', page.afterSequence);
    if (page.limit !== undefined) query = query.limit(page.limit);
    return (await query.execute()).map(rowToMessage);
  }

  async savePlan(row: PlanRow, fence?: number): Promise<void> {
    const values = { turn_id: row.turnId, session_id: row.sessionId, plan: JSON.stringify(row.plan), updated_at_ms: row.updatedAtMs };
    const upsert = sql` on conflict (turn_id) do update set plan = excluded.plan, updated_at_ms = excluded.updated_at_ms`;
    // One statement with the fence inside it: an upsert writes its row whenever the fence holds, so none written means fenced.
    const condition = fence === undefined ? sql`true` : fenceHolds(this.dialect, sql.val(row.sessionId), fence);
    const result = await sql`${insertWhere('turn_plans', values, condition)}${upsert}`.execute(this.db);
    if (!result.numAffectedRows) throw new FencedWriteError(row.sessionId);
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
    const plan = planSpanWrites(writes);
    const matched = await applySpanPlan(this.db, this.dialect, plan);
    return { unmatchedEnds: plan.unmatchedEnds + plan.ends.length - matched };
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

  async saveCompaction(row: CompactionRow, fence?: number): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await assertFence(trx, this.dialect, row.sessionId, fence);
      await trx.insertInto('compactions').values(compactionToRow(row)).execute();
    });
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

  async rewindTo(sessionId: string, compactionId: string, nowMs: number, fence?: number): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await assertFence(trx, this.dialect, sessionId, fence);
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

  correctInterrupted(nowMs: number): Promise<CorrectionReport> {
    return leases.correctUnheld(this.db, this.dialect, nowMs);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}
