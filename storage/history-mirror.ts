import { existsSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import { messageOf } from '../src/protocol/error-message.js';
import type { Warn } from '../src/protocol/log-fields.js';
import { KyselySessionStorage } from './kysely-storage.js';
import { messageToRow } from './rows.js';
import { auditColumns } from './audit-rows.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { toMs, type Database } from './schema.js';
import type { SessionStorage, TurnRow } from './session-storage.js';
import { sqliteDatabase } from './sqlite.js';

/**
 * What marks a SQLite file as a history mirror (`PRAGMA application_id`, "tcmr"): the chat opens such
 * a file read-only instead of running sessions on it. The tables are the sessions' own.
 */
const MIRROR_APPLICATION_ID = 0x74636d72;

/** Messages read from the source per query while a session is copied. */
const PAGE = 200;

/**
 * Issue 30 (the seed's optional history mirror): when a run ends, its session's new messages — with
 * the session and turn rows they hang on, and each tool result's audit columns — are copied to a local SQLite file in the same schema (the
 * same migrations), for browsing history offline (`turnchart chat --db FILE`).
 *
 * Copies happen after the run, one at a time, off the run's path: `runEnded` only notes the session.
 * A copy that fails is reported through `warn` and its session stays noted, so the next run's end (any
 * session's) tries it again; nothing is retried in a loop. Copies are idempotent: a message is written
 * once by its id, a turn row is added once and ended once.
 */
export class HistoryMirror {
  private readonly noted = new Set<string>();
  /** The highest sequence copied per session, read from the mirror the first time. */
  private readonly copiedUpTo = new Map<string, number>();
  private draining: Promise<void> | null = null;
  private closed = false;

  private constructor(
    private readonly source: SessionStorage,
    private readonly target: SessionStorage,
    private readonly db: Kysely<Database>,
    private readonly warn: Warn,
  ) {}

  /** Opens (creating and migrating when new) the mirror file; rejects when it cannot be. */
  static async open(filename: string, source: SessionStorage, warn: Warn): Promise<HistoryMirror> {
    const db = sqliteDatabase({ filename });
    const target = new KyselySessionStorage(db, { dialect: 'sqlite' });
    try {
      await target.migrate();
      await sql.raw(`pragma application_id = ${MIRROR_APPLICATION_ID}`).execute(db);
    } catch (error) {
      await target.close().catch(() => undefined);
      throw error;
    }
    return new HistoryMirror(source, target, db, warn);
  }

  /** A run of the session ended: its new messages are copied soon, with any copy still owed. Never waits. */
  runEnded(sessionId: string): void {
    if (this.closed) return;
    this.noted.add(sessionId);
    // Already draining: the drain picks the session up before it stops.
    this.draining ??= this.drain().finally(() => (this.draining = null));
  }

  /** Waits for the copy under way (a host closing lets its last run's copy finish), then closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.draining;
    await this.target.close();
  }

  /** The copies owed now; one that fails stays owed until the next run's end. */
  private async drain(): Promise<void> {
    // Off the run's path: the copy starts after the update that noted it has been delivered.
    await new Promise((resolve) => setImmediate(resolve));
    const failed = new Set<string>();
    for (;;) {
      const next = [...this.noted].find((id) => !failed.has(id));
      if (next === undefined) return;
      try {
        await this.copy(next);
        this.noted.delete(next);
      } catch (error) {
        failed.add(next);
        this.warn(`history mirror: could not copy session ${next} (retried at the next run's end): ${messageOf(error)}`, { sessionId: next, error });
      }
    }
  }

  private async copy(sessionId: string): Promise<void> {
    const session = await this.source.getSession(sessionId);
    if (!session) return;
    // The mirror holds no lease and no sequence reservations: those are the live database's.
    if (!(await this.target.getSession(sessionId))) {
      const { updateSequence: _reserved, ...row } = session;
      await this.target.createSession(row);
    } else {
      // What may change after creation (a switch of agent, of permission mode) is copied as it is now.
      await this.db.updateTable('sessions').set({ agent: session.agent, permission_mode: session.permissionMode }).where('id', '=', sessionId).execute();
    }
    await this.copyTurns(sessionId);
    let after = await this.lastCopied(sessionId);
    for (;;) {
      const page = await this.source.listMessages(sessionId, { afterSequence: after, limit: PAGE });
      // One statement per page: one commit (better-sqlite3 writes block the event loop while they last).
      if (page.length > 0) await this.db.insertInto('messages').values(await this.rowsOf(sessionId, page)).onConflict((oc) => oc.column('id').doNothing()).execute();
      after = page.at(-1)?.sequence ?? after;
      this.copiedUpTo.set(sessionId, after);
      if (page.length < PAGE) return;
      // Between pages the host's requests and runs get the event loop back.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * A page of messages as the mirror's rows, each tool result with its audit columns (RL-4: who
   * decided, how long it waited and ran), so the mirror's audit log is the live one's. The page's
   * audit entries are read in one query: the entries up to its last sequence, newest first.
   */
  private async rowsOf(sessionId: string, page: readonly StoredMessage[]) {
    const first = page[0]!.sequence;
    const entries = await this.source.listAudit(sessionId, { limit: page.length, before: page.at(-1)!.sequence + 1 });
    const audits = new Map(entries.filter((e) => e.sequence >= first).map((e) => [e.id, e]));
    return page.map((m) => ({ ...messageToRow(m), ...auditColumns(audits.get(m.id) ?? null) }));
  }

  /** Turn rows (and their runs) before the messages that name them; a turn ended since the last copy is ended here too. */
  private async copyTurns(sessionId: string): Promise<void> {
    const mirrored = new Map((await this.target.listTurns(sessionId)).map((turn) => [turn.id, turn]));
    for (const turn of await this.source.listTurns(sessionId)) {
      // A queued turn has written no message yet: it is copied once it has started.
      if (turn.status === 'queued') continue;
      const copy = mirrored.get(turn.id);
      if (!copy) {
        const run = turn.runId && turn.trigger ? { run: { id: turn.runId, trigger: turn.trigger } } : {};
        await this.target.beginTurn({ id: turn.id, sessionId, clientRequestId: turn.clientRequestId, startedAtMs: turn.startedAtMs, ...run }, []);
      }
      if ((!copy || copy.status === 'running') && turn.status !== 'running') await this.target.endTurn(turn.id, endOf(turn));
    }
  }

  private async lastCopied(sessionId: string): Promise<number> {
    const known = this.copiedUpTo.get(sessionId);
    if (known !== undefined) return known;
    const row = await this.db.selectFrom('messages').select((eb) => eb.fn.max('sequence').as('last')).where('session_id', '=', sessionId).executeTakeFirst();
    return row?.last === null || row?.last === undefined ? -1 : toMs(row.last);
  }
}

function endOf(turn: TurnRow) {
  return {
    status: turn.status as Exclude<TurnRow['status'], 'running' | 'queued'>,
    errorCode: turn.errorCode,
    errorMessage: turn.errorMessage,
    finalText: turn.finalText,
    finishedAtMs: turn.finishedAtMs ?? turn.startedAtMs,
  };
}

/** Whether the file is a history mirror (an existing SQLite file marked by `HistoryMirror`). */
export function isHistoryMirror(filename: string): boolean {
  if (!existsSync(filename)) return false;
  try {
    const db = new BetterSqlite3(filename, { readonly: true, fileMustExist: true });
    try {
      return db.pragma('application_id', { simple: true }) === MIRROR_APPLICATION_ID;
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

/** The mirror's sessions and messages, opened read-only: nothing can be written through it, by this process or by mistake. */
export function readHistoryMirror(filename: string): Pick<SessionStorage, 'listSessions' | 'getSession' | 'listMessages' | 'listTurns' | 'listAudit' | 'close'> {
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite3(filename, { readonly: true, fileMustExist: true }) }) });
  return new KyselySessionStorage(db, { dialect: 'sqlite' });
}
