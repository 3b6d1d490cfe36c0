/**
 * `pg_round_trips_per_step`: PostgreSQL statements a model step costs. On PostgreSQL every statement
 * is a network round trip (and every commit of a durable write a WAL flush), so this count, not CPU,
 * sets what a step costs there. One runtime on a fresh schema (dropped after) counts the statements
 * its own pool sends for a turn of 10 tool steps + the answer and for a turn of the answer alone,
 * from `startTurn` until the trace queue is flushed (span batches landing after the turn included);
 * the difference over 10 is the figure. The spec's floor is 2 per step: the assistant message is
 * stored before its tool runs (RT-12), the tool result before the next model call. Skipped, with the
 * reason, when PostgreSQL does not answer.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createRuntime, postgresStorage, type ModelPort, type ModelRequest } from '../src/index.js';
import { dropPostgresSchema } from '../storage/postgres.js';
import { median, readTool, stepModel } from './common.js';
import { messageOf } from '../src/protocol/error-message.js';

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The counted pool's connections carry this name: only their statements are counted. */
const APPLICATION_NAME = 'turnchart_bench_round_trips';
const TOOL_STEPS = 10;

export interface StatementCounts {
  total: number;
  messages: number;
  spans: number;
  other: number;
}

export interface PgRoundTripsResult {
  /** (statements of the 10-step turn − statements of the 0-step turn) ÷ 10, from the medians. */
  perStep: number;
  toolSteps: number;
  turns: number;
  /** Medians per turn, from startTurn to the flushed trace queue. */
  tenSteps: StatementCounts;
  zeroSteps: StatementCounts;
  /** Statements of `createSession` (median), counted apart from the turn. */
  createSession: number;
}

export async function measurePgRoundTrips(turns = 5): Promise<PgRoundTripsResult | { skipped: string }> {
  const missing = await unavailable();
  if (missing) return { skipped: missing };
  const schema = `tc_bench_${randomUUID().replaceAll('-', '')}`;
  const counter = new StatementCounter();
  const runtime = await createRuntime({
    storage: postgresStorage({ connectionString: DATABASE_URL, schema, applicationName: APPLICATION_NAME }),
    model: byRequest(stepModel(TOOL_STEPS), stepModel(0)),
    tools: [readTool()],
    agents: { default: { maxModelCalls: 50 } },
  });
  try {
    const turn = async (text: string) => {
      counter.start();
      const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
      const created = counter.stop().total;
      counter.start();
      const started = await session.startTurn({ clientRequestId: 'bench', input: [{ type: 'text', text }] });
      if (!started.ok) throw new Error(`startTurn refused: ${JSON.stringify(started.error)}`);
      const outcome = await session.waitForTurn(started.turnId);
      if (outcome.status !== 'completed') throw new Error(`turn ended ${outcome.status}`);
      await runtime.flushTrace();
      return { created, counts: counter.stop() };
    };
    // The first turns of a runtime pay for one-off work (the schema's first rows); they are not counted.
    for (const text of [TEN, ZERO]) await turn(text);
    const ten: StatementCounts[] = [];
    const zero: StatementCounts[] = [];
    const created: number[] = [];
    for (let i = 0; i < turns; i++) {
      for (const [text, into] of i % 2 === 0 ? ([[TEN, ten], [ZERO, zero]] as const) : ([[ZERO, zero], [TEN, ten]] as const)) {
        const result = await turn(text);
        into.push(result.counts);
        created.push(result.created);
      }
    }
    if (runtime.droppedSignals > 0) throw new Error(`${runtime.droppedSignals} trace signals dropped: the span writes did not all land`);
    const tenSteps = medianCounts(ten);
    const zeroSteps = medianCounts(zero);
    return { perStep: (tenSteps.total - zeroSteps.total) / TOOL_STEPS, toolSteps: TOOL_STEPS, turns, tenSteps, zeroSteps, createSession: median(created) };
  } finally {
    counter.uninstall();
    await runtime.shutdown();
    await dropPostgresSchema(DATABASE_URL, schema);
  }
}

const TEN = 'ten tool steps';
const ZERO = 'answer at once';

/** A model that takes the 10-step script or the answer-only one by the turn's user text. */
function byRequest(ten: ModelPort, zero: ModelPort): ModelPort {
  // Each counted session has one turn, so any user message naming the script decides it.
  const answerOnly = (request: ModelRequest) => request.messages.some((m) => m.role === 'user' && m.text.includes(ZERO));
  return {
    capabilities: ten.capabilities,
    stream: (request, options) => (answerOnly(request) ? zero : ten).stream(request, options),
  };
}

/**
 * Counts the statements sent by connections named `APPLICATION_NAME` while started: node-pg sends
 * each `Client.query` as one round trip (Kysely makes one call per statement, `begin` and `commit`
 * included). Other pools of the process are not counted.
 */
class StatementCounter {
  private readonly original = pg.Client.prototype.query;
  private counts: StatementCounts | null = null;

  constructor() {
    const count = (query: unknown) => this.count(query);
    const original = this.original as (...args: unknown[]) => unknown;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const name = (this as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name;
      if (name === APPLICATION_NAME) count(args[0]);
      return original.apply(this, args);
    } as typeof pg.Client.prototype.query;
  }

  start(): void {
    this.counts = { total: 0, messages: 0, spans: 0, other: 0 };
  }

  stop(): StatementCounts {
    const counts = this.counts ?? { total: 0, messages: 0, spans: 0, other: 0 };
    this.counts = null;
    return counts;
  }

  uninstall(): void {
    pg.Client.prototype.query = this.original;
  }

  private count(query: unknown): void {
    if (!this.counts) return;
    const text = typeof query === 'string' ? query : ((query as { text?: string } | null)?.text ?? '');
    this.counts.total += 1;
    if (/^\s*insert into "messages"/.test(text)) this.counts.messages += 1;
    else if (text.includes('trace_spans')) this.counts.spans += 1;
    else this.counts.other += 1;
  }
}

function medianCounts(samples: StatementCounts[]): StatementCounts {
  const of = (key: keyof StatementCounts) => median(samples.map((s) => s[key]));
  return { total: of('total'), messages: of('messages'), spans: of('spans'), other: of('other') };
}

/** Why PostgreSQL cannot be used for a figure, or null when it answers. */
export async function unavailable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  try {
    await client.connect();
    return null;
  } catch (error) {
    return `no PostgreSQL at ${DATABASE_URL}: ${messageOf(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}


if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await measurePgRoundTrips(Number(process.argv[2] ?? 5));
  console.log(JSON.stringify(result, null, 2));
}
