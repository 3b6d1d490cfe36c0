/**
 * `pg_turns_per_s_200`, `sqlite_turns_per_s_200`: many sessions on one database (issue 28). 200
 * sessions each run one turn of 3 tool steps + the answer from a zero-latency model, all started at
 * once; turns per second from the first `startTurn` until every turn has ended. One runtime per side
 * per round (sessions created before the clock starts), sides in alternating order, median of the
 * rounds. SQLite is `:memory:` (the peers' and the step figures' storage: no disk at all); PostgreSQL
 * runs with group commit (storage/group-commit.ts) and, for comparison, without it; the statements and
 * transactions its pool sent per step are counted (bench/pg-statement-timer.ts).
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createRuntime, postgresStorage, sqliteStorage, type SessionHandle } from '../src/index.js';
import { dropPostgresSchema } from '../storage/postgres.js';
import { gcIfAvailable, median, readTool, stepModel } from './common.js';
import { StatementTimer } from './pg-statement-timer.js';
import { unavailable } from './pg-round-trips.js';

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TOOL_STEPS = 3;
/** The runtime's pool names its connections so: only their statements are counted. */
const APPLICATION_NAME = 'turnchart_bench_many';
/** Model calls per turn: the tool steps and the answer. */
const STEPS = TOOL_STEPS + 1;

type Side = 'sqlite' | 'postgres' | 'postgres_single';

export interface ManySessionsResult {
  sessions: number;
  rounds: number;
  /** Median turns per second by side. */
  turnsPerS: Record<Side, number>;
  samples: Record<Side, number[]>;
  /** Transactions committed per model step on PostgreSQL with group commit (reads included), and without it. */
  commitsPerStep: number;
  singleCommitsPerStep: number;
  /** Statements per model step on PostgreSQL with group commit, and without it. */
  statementsPerStep: number;
  singleStatementsPerStep: number;
}

export async function measureManySessions(sessions = 200, rounds = 3, warmupRounds = 1): Promise<ManySessionsResult | { skipped: string }> {
  const missing = await unavailable();
  if (missing) return { skipped: missing };
  const timer = new StatementTimer(APPLICATION_NAME);
  const schemas: string[] = [];
  const samples: Record<Side, number[]> = { sqlite: [], postgres: [], postgres_single: [] };
  const server = { postgres: { commits: 0, statements: 0 }, postgres_single: { commits: 0, statements: 0 } };
  try {
    const sides: Side[] = ['sqlite', 'postgres', 'postgres_single'];
    for (let round = 0; round < warmupRounds + rounds; round++) {
      const timed = round >= warmupRounds;
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const schema = `tc_many_${randomUUID().replaceAll('-', '')}`;
        if (side !== 'sqlite') schemas.push(schema);
        const storage =
          side === 'sqlite'
            ? sqliteStorage({ filename: ':memory:' })
            : postgresStorage({ connectionString: DATABASE_URL, schema, groupCommit: side === 'postgres', applicationName: APPLICATION_NAME });
        const runtime = await createRuntime({ storage, model: stepModel(TOOL_STEPS), tools: [readTool()], agents: { default: { maxModelCalls: 20 } } });
        try {
          const handles: SessionHandle[] = [];
          for (let i = 0; i < sessions; i++) handles.push(await runtime.createSession({ agent: 'default', permissionMode: 'auto' }));
          gcIfAvailable();
          timer.take();
          const started = performance.now();
          await runAll(handles);
          const seconds = (performance.now() - started) / 1000;
          if (timed) samples[side].push(sessions / seconds);
          const times = timer.take();
          if (timed && side !== 'sqlite') {
            server[side].commits += times.commits;
            server[side].statements += Object.values(times.byKind).reduce((sum, kind) => sum + kind.count, 0);
          }
        } finally {
          await runtime.shutdown();
        }
      }
    }
  } finally {
    timer.uninstall();
    for (const schema of schemas) await dropPostgresSchema(DATABASE_URL, schema).catch(() => undefined);
  }
  const steps = rounds * sessions * STEPS;
  return {
    sessions,
    rounds,
    turnsPerS: { sqlite: median(samples.sqlite), postgres: median(samples.postgres), postgres_single: median(samples.postgres_single) },
    samples,
    commitsPerStep: server.postgres.commits / steps,
    singleCommitsPerStep: server.postgres_single.commits / steps,
    statementsPerStep: server.postgres.statements / steps,
    singleStatementsPerStep: server.postgres_single.statements / steps,
  };
}

async function runAll(handles: SessionHandle[]): Promise<void> {
  await Promise.all(
    handles.map(async (session, i) => {
      const started = await session.startTurn({ clientRequestId: `c${i}`, input: [{ type: 'text', text: 'go' }] });
      if (!started.ok) throw new Error(`startTurn refused: ${JSON.stringify(started.error)}`);
      const outcome = await session.waitForTurn(started.turnId);
      if (outcome.status !== 'completed') throw new Error(`turn ended ${outcome.status}: ${JSON.stringify(outcome)}`);
    }),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await measureManySessions(Number(process.argv[2] ?? 200)), null, 2));
}
