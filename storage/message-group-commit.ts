import { sql, type Kysely } from 'kysely';
import type { ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { auditColumns, auditValues } from './audit-rows.js';
import { executeKept } from './prepared-statements.js';
import { messageToRow, messageValues } from './rows.js';
import type { Database } from './schema.js';

/**
 * Group commit of the fenced message inserts on PostgreSQL (issue 28): the writes of many sessions
 * that arrive within one turn of the event loop go out as one statement, so they share one round
 * trip and one WAL flush instead of each paying both. Each caller's promise still settles only once
 * its own row is durable (or refused), so write-before-run (RT-12) holds per session.
 *
 * A lone write goes out alone, through the same statement as without batching. While `maxInFlight`
 * batches wait on the server, new writes gather; they leave as one batch when one returns. A batch
 * the server refuses as a whole (a sequence taken, a deadlock, a lost connection) is written again
 * row by row, so each caller gets exactly the outcome its own write would have had.
 */

/** Any message: only its row's keys are read, for the column list. */
const SAMPLE: StoredMessage = { id: '', sessionId: '', turnId: '', sequence: 0, createdAtMs: 0, message: { role: 'assistant', text: '', reasoning: '', toolCalls: [] } };

export interface MessageWrite {
  message: StoredMessage;
  fence: number;
  audit: ToolAudit | null;
}

interface Waiting extends MessageWrite {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitCounts {
  /** Statements sent for the batched writes (a lone write is one). */
  statements: number;
  /** Writes that went out with at least one other. */
  batchedWrites: number;
  /** Batches the server refused as a whole, then written row by row. */
  fallbacks: number;
}

export class MessageGroupCommit {
  private pending: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  readonly counts: GroupCommitCounts = { statements: 0, batchedWrites: 0, fallbacks: 0 };

  constructor(
    private readonly db: Kysely<Database>,
    /** The one-row write and its fence check: used alone, and for each row of a refused batch. */
    private readonly writeOne: (write: MessageWrite) => Promise<void>,
    /** What a row the batch did not insert means: fenced (throws), or already there (its id taken). */
    private readonly checkNotInserted: (write: MessageWrite) => Promise<void>,
    // A few batches on the server at once keep the pool's other connections for everything else.
    private readonly maxInFlight = 4,
    // A bound on one statement's parameters' size: a batch of full context windows stays a few MB.
    private readonly maxBatch = 256,
  ) {}

  write(write: MessageWrite): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ...write, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    // After the I/O callbacks of this loop turn: every write they started joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
    }
  }

  private async send(batch: Waiting[]): Promise<void> {
    this.counts.statements += 1;
    if (batch.length === 1) return settle(batch[0]!, this.writeOne(batch[0]!));
    this.counts.batchedWrites += batch.length;
    // Session order: the fence checks share-lock session rows in the order other multi-row writers
    // (lease renewal, correction) lock them, so a batch cannot deadlock with them.
    batch.sort((a, b) => (a.message.sessionId < b.message.sessionId ? -1 : a.message.sessionId > b.message.sessionId ? 1 : a.message.sequence - b.message.sequence));
    let inserted: Set<string>;
    try {
      const result = await executeKept(this.db, 'postgres', batchInsert(batch).compile(this.db));
      inserted = new Set(result.rows.map((row) => row.id));
    } catch {
      this.counts.fallbacks += 1;
      await Promise.all(batch.map((write) => settle(write, this.writeOne(write))));
      return;
    }
    await Promise.all(batch.map((write) => settle(write, inserted.has(write.message.id) ? Promise.resolve() : this.checkNotInserted(write))));
  }
}

async function settle(waiting: Waiting, outcome: Promise<void>): Promise<void> {
  try {
    await outcome;
    waiting.resolve();
  } catch (error) {
    waiting.reject(error);
  }
}

/**
 * The row's columns in the order `messageValues` and `auditValues` list them (the order of
 * `messageToRow`'s and `auditColumns`' keys), each with its array type.
 */
const COLUMNS: ReadonlyArray<readonly [string, string]> = [...Object.keys(messageToRow(SAMPLE)), ...Object.keys(auditColumns(null))].map(
  (name) => [name, name === 'sequence' ? 'integer' : name.endsWith('_ms') ? 'bigint' : 'text'] as const,
);

/**
 * One insert of every row whose session still has the row's fence, returning the ids it inserted.
 * Each column is one array parameter taken apart by `unnest`, so the text is the same for every
 * batch size and stays prepared on each connection.
 */
function batchInsert(batch: readonly MessageWrite[]) {
  const rows = batch.map(({ message, audit, fence }) => [...messageValues(message), ...auditValues(audit), fence]);
  if (rows[0]!.length !== COLUMNS.length + 1) throw new Error('the batched message insert lists other columns than messageValues and auditValues');
  const columns = [...COLUMNS, ['fence', 'bigint'] as const];
  const arrays = columns.map(([, type], i) => sql`${sql.val(rows.map((row) => row[i]))}::${sql.raw(type)}[]`);
  const names = COLUMNS.map(([name]) => sql.id(name));
  return sql<{ id: string }>`insert into messages (${sql.join(names)})
    select ${sql.join(COLUMNS.map(([name]) => sql.ref(`v.${name}`)))}
    from unnest(${sql.join(arrays)}) as v (${sql.join(columns.map(([name]) => sql.id(name)))})
    where exists (select 1 from sessions where sessions.id = v.session_id and sessions.fencing_token = v.fence for share)
    on conflict (id) do nothing
    returning messages.id`;
}
