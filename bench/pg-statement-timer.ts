/**
 * Where a PostgreSQL step's time goes: every statement the pool named `applicationName` sends is
 * timed from `Client.query` to its answer (node-pg sends each call as one round trip), grouped by what
 * it does, and the time the process spent with at least one statement outstanding is kept apart
 * from the rest — the runtime's own work plus the waits between statements.
 */
import pg from 'pg';

export interface StatementTimes {
  /** Statements and their summed µs, by kind. */
  byKind: Record<string, { count: number; us: number }>;
  /** µs with at least one statement outstanding (overlapping statements counted once). */
  busyUs: number;
  /** Transactions committed: each statement outside `begin` … `commit` is one, and each `commit`. */
  commits: number;
}

export class StatementTimer {
  private readonly original = pg.Client.prototype.query;
  private times: StatementTimes = { byKind: {}, busyUs: 0, commits: 0 };
  /** The connections inside an explicit transaction. */
  private readonly inTransaction = new WeakSet<pg.Client>();
  private outstanding = 0;
  private busySince = 0;

  constructor(applicationName: string) {
    const original = this.original as (...args: unknown[]) => unknown;
    // Called before the statement is handed to the client: its time includes the write to the socket.
    const observe = (client: pg.Client, query: unknown): (() => void) => {
      const kind = kindOf(query);
      this.countCommit(client, kind);
      return this.begin(kind);
    };
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const name = (this as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name;
      const done = name === applicationName ? observe(this, args[0]) : null;
      const result = original.apply(this, args);
      if (!done) return result;
      if (!(result instanceof Promise)) {
        done();
        return result;
      }
      return result.finally(done);
    } as typeof pg.Client.prototype.query;
  }

  /** The times since the last reset. */
  take(): StatementTimes {
    const taken = this.times;
    this.times = { byKind: {}, busyUs: 0, commits: 0 };
    return taken;
  }

  uninstall(): void {
    pg.Client.prototype.query = this.original;
  }

  private countCommit(client: pg.Client, kind: string): void {
    if (kind === 'begin') this.inTransaction.add(client);
    else if (kind === 'commit' || kind === 'rollback') {
      this.inTransaction.delete(client);
      if (kind === 'commit') this.times.commits += 1;
    } else if (!this.inTransaction.has(client)) this.times.commits += 1;
  }

  private begin(kind: string): () => void {
    const started = performance.now();
    if (this.outstanding++ === 0) this.busySince = started;
    return () => {
      const ended = performance.now();
      const entry = (this.times.byKind[kind] ??= { count: 0, us: 0 });
      entry.count += 1;
      entry.us += (ended - started) * 1000;
      if (--this.outstanding === 0) this.times.busyUs += (ended - this.busySince) * 1000;
    };
  }
}

/** A statement's kind: the transaction verbs, else the verb and the table it names. */
function kindOf(query: unknown): string {
  const text = (typeof query === 'string' ? query : ((query as { text?: string } | null)?.text ?? '')).trim().toLowerCase();
  if (text === 'begin' || text === 'commit' || text === 'rollback' || text.startsWith('start transaction')) return text.split(' ')[0]!;
  const verb = /^(insert into|update|delete from|select|with)\s/.exec(text)?.[1] ?? text.split(/\s/)[0] ?? '?';
  const table = verb === 'select' || verb === 'with' ? /\sfrom\s+"?([a-z_]+)"?/.exec(text)?.[1] : /^(?:insert into|update|delete from)\s+"?([a-z_]+)"?/.exec(text)?.[1];
  return `${verb.split(' ')[0]} ${table ?? '?'}`;
}
