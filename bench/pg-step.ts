/**
 * `pg_step_over_floor`: a PostgreSQL step against the least it could cost. The peers bench's workload
 * (`../shared/peers`, `turnchart_sqlite` and `turnchart_postgres`): a fresh session per turn, each turn
 * 9 tool steps + the answer from a zero-latency model, one runtime per side, every step durable and
 * streamed. Run here on both storages in one process, alternating rounds, so the two sides see the same
 * machine. The floor is the SQLite step plus two commits (`pg_commit_us`, measured in the same run):
 * a tool step must wait for the assistant message and the tool result to be durable (RT-12), and
 * nothing else in it has to touch the database's disk. The figure is the PostgreSQL step over that
 * floor; issue 28's bar is 1.3.
 *
 * The timed rounds run uninstrumented: the statement timer (bench/pg-statement-timer.ts) wraps every
 * `Client.query` in a promise and a `finally`, a cost of the measuring that would be counted as the
 * runtime's own. Where a step goes, by statement, comes from separate PostgreSQL
 * passes with the timer installed, one after each timed round, on the same workload and schema.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createRuntime, postgresStorage, sqliteStorage, type Runtime } from '../src/index.js';
import { dropPostgresSchema } from '../storage/postgres.js';
import { gcIfAvailable, median, readTool, stepModel } from './common.js';
import { measurePgCommit } from './pg-commit.js';
import { StatementTimer } from './pg-statement-timer.js';
import { messageOf } from '../src/protocol/error-message.js';

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Model calls per turn: 9 tool steps and the answer, as the peers bench's default `STEPS=10`. */
const STEPS = 10;

export interface PgStepResult {
  /** Median µs per model step on each storage, from the timed rounds. */
  sqliteUs: number;
  postgresUs: number;
  /** Median µs of one committed one-row insert from a bare client (bench/pg-commit.ts), measured after each PostgreSQL round. */
  commitUs: number;
  /** postgresUs ÷ (sqliteUs + 2 × commitUs). */
  overFloor: number;
  /** Transactions the runtime committed per step in the instrumented passes (reads included). */
  commitsPerStep: number;
  /** Statements per step of the instrumented PostgreSQL passes by kind: how many, and µs waited on them. */
  statements: Record<string, { perStep: number; usPerStep: number }>;
  /** µs per step with a statement outstanding, in the instrumented passes; the rest of `instrumentedUs` is the process's own work. */
  inStatementsUs: number;
  /** Median µs per step of the instrumented PostgreSQL passes (the timer's own cost included; not the headline). */
  instrumentedUs: number;
  rounds: number;
  turnsPerRound: number;
  samples: { sqlite: number[]; postgres: number[]; instrumented: number[] };
}

export interface PgStepOptions {
  rounds?: number;
  warmupRounds?: number;
  turnsPerRound?: number;
}

export async function measurePgStep(options: PgStepOptions = {}): Promise<PgStepResult | { skipped: string }> {
  const { rounds = 5, warmupRounds = 2, turnsPerRound = 60 } = options;
  const reachable = await measurePgCommit(1, 0);
  if ('skipped' in reachable) return reachable;
  // The floor's commit is measured beside every round, as the server's state drifts (checkpoints,
  // autovacuum after earlier work): the median of the rounds' medians.
  const commitSamples: number[] = [];
  const schema = `tc_step_${randomUUID().replaceAll('-', '')}`;
  const APPLICATION_NAME = 'turnchart_bench_step';
  const statementTimes: Record<string, { count: number; us: number }> = {};
  let busyUs = 0;
  const postgres = await createRuntime(runtimeOptions(postgresStorage({ connectionString: DATABASE_URL, schema, applicationName: APPLICATION_NAME })));
  const samples = { sqlite: [] as number[], postgres: [] as number[], instrumented: [] as number[] };
  let commits = 0;
  let instrumentedSteps = 0;
  try {
    for (let round = 0; round < warmupRounds + rounds; round++) {
      const timed = round >= warmupRounds;
      // SQLite gets a fresh in-memory database per round (the peers bench's fresh runtime); PostgreSQL
      // keeps one schema for the run, as a server's database grows.
      const sqlite = await createRuntime(runtimeOptions(sqliteStorage({ filename: ':memory:' })));
      try {
        const sides: Array<['sqlite' | 'postgres', Runtime]> = round % 2 === 0 ? [['sqlite', sqlite], ['postgres', postgres]] : [['postgres', postgres], ['sqlite', sqlite]];
        for (const [name, runtime] of sides) {
          gcIfAvailable();
          const elapsedUs = await runRound(runtime, turnsPerRound);
          if (timed) samples[name].push(elapsedUs / (turnsPerRound * STEPS));
          if (timed && name === 'postgres') {
            const commit = await measurePgCommit(100, 50);
            if (!('skipped' in commit)) commitSamples.push(commit.commitUs);
          }
        }
        if (timed) {
          // Where the step goes: the same workload once more on PostgreSQL, every statement timed.
          gcIfAvailable();
          const timer = new StatementTimer(APPLICATION_NAME);
          let elapsedUs: number;
          let times: ReturnType<StatementTimer['take']>;
          try {
            elapsedUs = await runRound(postgres, turnsPerRound);
            times = timer.take();
          } finally {
            timer.uninstall();
          }
          samples.instrumented.push(elapsedUs / (turnsPerRound * STEPS));
          instrumentedSteps += turnsPerRound * STEPS;
          busyUs += times.busyUs;
          commits += times.commits;
          for (const [kind, { count, us }] of Object.entries(times.byKind)) {
            const entry = (statementTimes[kind] ??= { count: 0, us: 0 });
            entry.count += count;
            entry.us += us;
          }
        }
      } finally {
        await sqlite.shutdown();
      }
    }
  } finally {
    await postgres.shutdown();
    await dropPostgresSchema(DATABASE_URL, schema).catch(() => undefined);
  }
  const sqliteUs = median(samples.sqlite);
  const postgresUs = median(samples.postgres);
  const commitUs = median(commitSamples);
  const steps = Math.max(1, instrumentedSteps);
  return {
    sqliteUs,
    postgresUs,
    commitUs,
    overFloor: postgresUs / (sqliteUs + 2 * commitUs),
    commitsPerStep: commits / steps,
    statements: Object.fromEntries(
      Object.entries(statementTimes)
        .sort(([, a], [, b]) => b.us - a.us)
        .map(([kind, { count, us }]) => [kind, { perStep: count / steps, usPerStep: us / steps }]),
    ),
    inStatementsUs: busyUs / steps,
    instrumentedUs: median(samples.instrumented),
    rounds,
    turnsPerRound,
    samples,
  };
}

function runtimeOptions(storage: Parameters<typeof createRuntime>[0]['storage']): Parameters<typeof createRuntime>[0] {
  return { storage, model: stepModel(STEPS - 1), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } };
}

/** µs to run one round's turns on `runtime`. */
async function runRound(runtime: Runtime, turnsPerRound: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < turnsPerRound; i++) await runTurn(runtime, i);
  return (performance.now() - started) * 1000;
}

async function runTurn(runtime: Runtime, i: number): Promise<void> {
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
  const started = await session.startTurn({ clientRequestId: `c${i}`, input: [{ type: 'text', text: 'go' }] });
  if (!started.ok) throw new Error(`startTurn refused: ${JSON.stringify(started.error)}`);
  const outcome = await session.waitForTurn(started.turnId);
  if (outcome.status !== 'completed') throw new Error(`turn ended ${outcome.status}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    console.log(JSON.stringify(await measurePgStep(), null, 2));
  } catch (error) {
    console.error(messageOf(error));
    process.exitCode = 1;
  }
}
