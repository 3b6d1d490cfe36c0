import { sql, type RawBuilder } from 'kysely';

/**
 * Group commit on PostgreSQL (issue 28): writes of many sessions that arrive within one turn of the
 * event loop go out as one statement, so they share one round trip and one WAL flush instead of each
 * paying both. Each caller's promise still settles only once its own write is durable (or refused),
 * so write-before-run (RT-12) holds per session.
 *
 * A lone write goes out alone, through the statement used without batching. While `maxInFlight`
 * batches wait on the server, new writes gather; they leave as one batch when one returns. A batch
 * the server refuses as a whole (a sequence taken, a deadlock, a lost connection) is written again
 * one by one, so each caller gets exactly the outcome its own write would have had.
 */

export interface GroupCommitCounts {
  /** Statements sent for the writes (a lone write is one). */
  statements: number;
  /** Writes that went out with at least one other. */
  batchedWrites: number;
  /** Batches the server refused as a whole, then written one by one. */
  fallbacks: number;
}

export interface GroupCommitWriter<W> {
  /** The write alone, with its own checks: for a lone write, and for each write of a refused batch. */
  one(write: W): Promise<void>;
  /** Writes the batch in one statement; resolves with the keys of the writes it applied. */
  many(batch: W[]): Promise<Set<string>>;
  key(write: W): string;
  /** What a write the batch did not apply means: throws (fenced, say), or resolves (applied already). */
  notApplied(write: W): Promise<void>;
}

interface Waiting<W> {
  write: W;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<W> {
  private pending: Waiting<W>[] = [];
  private inFlight = 0;
  private scheduled = false;
  readonly counts: GroupCommitCounts = { statements: 0, batchedWrites: 0, fallbacks: 0 };

  constructor(
    private readonly writer: GroupCommitWriter<W>,
    // Two batches on the server at once: one gathers while the other is answered, and the pool keeps
    // its other connections for everything else (4 or 1 measured no better in bench/many-sessions.ts).
    private readonly maxInFlight = 2,
    // A bound on one statement's parameters: a batch of full context windows stays a few MB.
    private readonly maxBatch = 256,
  ) {}

  write(write: W): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
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

  private async send(batch: Waiting<W>[]): Promise<void> {
    const { writer } = this;
    this.counts.statements += 1;
    if (batch.length === 1) return settle(batch[0]!, writer.one(batch[0]!.write));
    this.counts.batchedWrites += batch.length;
    let applied: Set<string>;
    try {
      applied = await writer.many(batch.map((w) => w.write));
    } catch {
      this.counts.fallbacks += 1;
      await Promise.all(batch.map((w) => settle(w, writer.one(w.write))));
      return;
    }
    await Promise.all(batch.map((w) => settle(w, applied.has(writer.key(w.write)) ? Promise.resolve() : writer.notApplied(w.write))));
  }
}

async function settle<W>(waiting: Waiting<W>, outcome: Promise<void>): Promise<void> {
  try {
    await outcome;
    waiting.resolve();
  } catch (error) {
    waiting.reject(error);
  }
}


/**
 * `held as materialized (…)`: the sessions named by `sessionIds` (a subquery), share-locked in id
 * order — the order lease renewal and correction lock them for update — so a batch waits on them
 * but never deadlocks with them; a batch's statement then keeps only the rows whose fence is held.
 */
export function heldSessions(sessionIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`held as materialized (select sessions.id, sessions.fencing_token from sessions where sessions.id in (${sessionIds}) order by sessions.id for share)`;
}

/** A column's array type in a batch's `unnest`: the tables' few non-text columns by name. */
function columnType(name: string): string {
  return name === 'sequence' ? 'integer' : name.endsWith('_ms') || name === 'fence' ? 'bigint' : 'text';
}

/** `unnest(<one typed array per column>) as <alias> (<columns>)`: a batch's rows back from their columns. */
export function unnestRows(alias: string, columns: readonly string[], rows: readonly unknown[][]): RawBuilder<unknown> {
  const arrays = columns.map((name, i) => sql`${sql.val(rows.map((row) => row[i]))}::${sql.raw(columnType(name))}[]`);
  return sql`unnest(${sql.join(arrays)}) as ${sql.id(alias)} (${sql.join(columns.map((name) => sql.id(name)))})`;
}
