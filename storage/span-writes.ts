import { sql, type Kysely } from 'kysely';
import type { DialectName } from './dialect.js';
import { spanToRow } from './rows.js';
import type { Database } from './schema.js';
import type { SpanEnd, SpanWrite } from './session-storage.js';
import { encodeText } from './text-codec.js';
import { runInTransaction, type PlannedStatement } from './transaction.js';
import { executeKept } from './prepared-statements.js';

type SpanRow = ReturnType<typeof spanToRow>;

/** An end for a span started in an earlier batch: an update of its row when it is still running. */
interface StoredEnd {
  spanId: string;
  end: SpanEnd;
}

/** A batch reduced to what the database must do: rows to insert, ends to apply to stored rows. */
export interface SpanPlan {
  rows: SpanRow[];
  ends: StoredEnd[];
  /** Ends already known to match nothing, without asking the database. */
  unmatchedEnds: number;
}

/**
 * Applies a batch in order, as one statement after another would, except that an end whose start is
 * in the same batch closes the row before it is inserted. So the database sees each span once, and
 * no end refers to a row inserted by the same statement (a PostgreSQL statement does not see its own
 * inserts). A second end of the same span matches nothing, as the update finds it no longer running.
 */
export function planSpanWrites(writes: readonly SpanWrite[]): SpanPlan {
  const rows: SpanRow[] = [];
  const startedHere = new Map<string, SpanRow>();
  const ends: StoredEnd[] = [];
  const endedStored = new Set<string>();
  let unmatchedEnds = 0;
  for (const write of writes) {
    if (write.type === 'start') {
      const row = spanToRow(write.span);
      rows.push(row);
      startedHere.set(row.id, row);
      continue;
    }
    const row = startedHere.get(write.spanId);
    if (row) {
      if (row.status !== 'running') unmatchedEnds += 1;
      else Object.assign(row, endColumns(write.end));
    } else if (endedStored.has(write.spanId)) unmatchedEnds += 1;
    else {
      endedStored.add(write.spanId);
      ends.push({ spanId: write.spanId, end: write.end });
    }
  }
  return { rows, ends, unmatchedEnds };
}

function endColumns(end: SpanEnd) {
  return { status: end.status, error_code: encodeText(end.errorCode), ended_at_ms: end.endedAtMs };
}

/** The columns of a span row in the order the batch statements list them. */
const SPAN_COLUMNS = ['id', 'session_id', 'turn_id', 'kind', 'name', 'source', 'status', 'error_code', 'started_at_ms', 'ended_at_ms'] as const;
const END_COLUMNS = ['id', 'status', 'error_code', 'ended_at_ms'] as const;

const columnList = (columns: readonly string[]) => sql.join(columns.map((c) => sql.id(c)));

function endRows(ends: StoredEnd[]) {
  return ends.map(({ spanId, end }) => ({ id: spanId, ...endColumns(end) }));
}

/**
 * SQLite: a batch as one JSON array parameter, its rows taken apart by `json_each`. The statement's
 * text is the same for every batch size, so the connection prepares it once; a `values` list has a
 * text, and a preparation, per size.
 */
function fromJson<T extends Record<string, unknown>>(rows: T[], columns: readonly (keyof T & string)[]) {
  const picks = columns.map((column, i) => sql`value ->> ${sql.raw(String(i))} as ${sql.id(column)}`);
  return sql`select ${sql.join(picks)} from json_each(${JSON.stringify(rows.map((row) => columns.map((column) => row[column])))})`;
}

/** Closes the still-running spans named in `ends`, returning their ids. */
const closeEnded = sql`update trace_spans set status = ends.status, error_code = ends.error_code, ended_at_ms = ends.ended_at_ms
    from ends where trace_spans.id = ends.id and trace_spans.status = 'running'
    returning trace_spans.id`;

/** Writes a planned batch all or nothing; resolves with how many of its stored ends matched a running span. */
export async function applySpanPlan(db: Kysely<Database>, dialect: DialectName, plan: SpanPlan): Promise<number> {
  const { rows, ends } = plan;
  if (dialect === 'postgres') return applyInOneStatement(db, rows, ends);
  // The ends first: none of them may match a row this batch inserts (an end before its span's start matches nothing).
  let matched = 0;
  const statements: PlannedStatement[] = [];
  if (ends.length > 0) {
    const query = sql`with ends as (${fromJson(endRows(ends), END_COLUMNS)}) ${closeEnded}`.compile(db);
    statements.push({ query, check: (result) => (matched = result.rows.length) });
  }
  if (rows.length > 0) statements.push({ query: sql`insert into trace_spans (${columnList(SPAN_COLUMNS)}) ${fromJson(rows, SPAN_COLUMNS)}`.compile(db) });
  await runInTransaction(db, statements);
  return matched;
}

/**
 * PostgreSQL: the inserts and the updates in one statement (a data-modifying CTE), so one round trip,
 * and its commit does not wait for the WAL flush: `set_config(…, true)` lasts until the end of the
 * statement's own implicit transaction, commit included. Spans are signals (RT-12, RT-26): a crash
 * may lose the last ones, and restart correction turns those left running into `outcome_unknown`.
 * Every part of one statement reads the same snapshot, so the ends cannot match a row inserted
 * beside them, as on SQLite where they run first.
 *
 * Each column travels as one array parameter and `unnest` turns the arrays back into rows: the text
 * is the same for every batch size, so it is kept prepared, and the server parses ten parameters
 * rather than ten per span.
 */
async function applyInOneStatement(db: Kysely<Database>, rows: SpanRow[], ends: StoredEnd[]): Promise<number> {
  const parts = [];
  if (rows.length > 0) parts.push(sql`started as (${insertUnnested(rows)})`);
  if (ends.length > 0) parts.push(endsUnnested(ends), sql`ended as (${closeEnded})`);
  const matched = ends.length > 0 ? sql`(select count(*) from ended)` : sql`0`;
  const statement = sql<{ matched: string | number }>`with ${sql.join(parts)}
    select ${matched} as matched, set_config('synchronous_commit', 'off', true) as commit_mode`;
  const result = await executeKept(db, 'postgres', statement.compile(db));
  return Number(result.rows[0]?.matched ?? 0);
}

/** `unnest(<one typed array per column>)`: the rows back from their columns (the `_ms` ones are bigint). */
function unnested<T extends Record<string, unknown>>(rows: T[], columns: readonly (keyof T & string)[]) {
  const arrays = columns.map((key) => sql`${sql.val(rows.map((row) => row[key]))}::${sql.raw(key.endsWith('_ms') ? 'bigint' : 'text')}[]`);
  return sql`unnest(${sql.join(arrays)})`;
}

function insertUnnested(rows: SpanRow[]) {
  return sql`insert into trace_spans (${columnList(SPAN_COLUMNS)}) select * from ${unnested(rows, SPAN_COLUMNS)}`;
}

function endsUnnested(ends: StoredEnd[]) {
  return sql`ends (${columnList(END_COLUMNS)}) as (select * from ${unnested(endRows(ends), END_COLUMNS)})`;
}
