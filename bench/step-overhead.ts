/**
 * `step_overhead_ratio`: wall time per model step of the runtime versus the bare loop of
 * bare-loop.ts, both on their own `sqliteStorage(':memory:')`, the same zero-latency model and
 * the same read tool. Storage, runtime and sessions are created outside the timed region; a timed
 * repetition runs `turns` sequential turns (one per fresh session, so the conversation never grows
 * across repetitions) and then waits for background writes (the runtime's trace queue) to land.
 */
import { createRuntime, sqliteStorage, type Runtime, type SessionHandle, type SessionStorage } from '../src/index.js';
import { BareLoop } from './bare-loop.js';
import { median, NullStorage, readTool, stepModel, trackedStorage, type TrackedStorage } from './common.js';

export interface StepOverheadOptions {
  /** Tool steps per turn; each turn makes `toolSteps + 1` model calls. */
  toolSteps: number;
  turnsPerRep: number;
  warmupReps: number;
  reps: number;
}

export interface Side {
  name: string;
  rep(turns: number): Promise<{ usPerStep: number; updates: number; writes: number }>;
}

export type StorageKind = 'sqlite' | 'null';

type Rep = Awaited<ReturnType<Side['rep']>>;

/**
 * One timed repetition on a runtime set up outside the clock: `turns` sessions are opened (each given
 * to `opened`, say to watch it), then one turn runs in each, in sequence; the clock stops once the
 * trace queue, the storage and `settle` (what an observer still holds) are done. µs per model step,
 * and updates and writes per turn.
 */
export async function timeTurns(
  runtime: Runtime,
  storage: TrackedStorage,
  turns: number,
  toolSteps: number,
  hooks: { opened?: (session: SessionHandle) => void; settle?: () => Promise<void> } = {},
): Promise<Rep> {
  const sessions: SessionHandle[] = [];
  let updates = 0;
  for (let i = 0; i < turns; i++) {
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
    session.updates$.subscribe(() => (updates += 1));
    hooks.opened?.(session);
    sessions.push(session);
  }
  await storage.idle();
  const writesBefore = storage.writes;
  const started = performance.now();
  for (const session of sessions) {
    const turn = await session.startTurn({ clientRequestId: 'bench', input: [{ type: 'text', text: 'read the files' }] });
    if (!turn.ok) throw new Error(`startTurn refused: ${JSON.stringify(turn.error)}`);
    const outcome = await session.waitForTurn(turn.turnId);
    if (outcome.status !== 'completed') throw new Error(`bench turn did not complete: ${JSON.stringify(outcome)}`);
  }
  // The trace queue writes its batches a window apart: what is still queued is written now, inside the clock.
  await runtime.flushTrace();
  await storage.idle();
  await hooks.settle?.();
  const elapsed = performance.now() - started;
  const writes = storage.writes - writesBefore;
  return { usPerStep: (elapsed * 1000) / (turns * (toolSteps + 1)), updates: updates / turns, writes: writes / turns };
}

function makeStorage(kind: StorageKind): TrackedStorage {
  const inner: SessionStorage = kind === 'sqlite' ? sqliteStorage({ filename: ':memory:' }) : new NullStorage();
  return trackedStorage(inner);
}

/**
 * The runtime side. Every repetition gets a fresh storage and runtime (set up and shut down outside
 * the timed region), so sessions left open by earlier repetitions do not weigh on later ones.
 */
export function runtimeSide(toolSteps: number, storageKind: StorageKind = 'sqlite'): Side {
  return {
    name: storageKind === 'sqlite' ? 'runtime' : 'runtime (null storage)',
    async rep(turns) {
      const storage = makeStorage(storageKind);
      const runtime = await createRuntime({
        storage,
        model: stepModel(toolSteps),
        tools: [readTool()],
        agents: { default: { maxModelCalls: 50 } },
      });
      const result = await timeTurns(runtime, storage, turns, toolSteps);
      await runtime.shutdown();
      return result;
    },
  };
}

/** The bare-loop side; like the runtime side, a fresh storage per repetition. */
export function baselineSide(toolSteps: number, spans: boolean, storageKind: StorageKind = 'sqlite'): Side {
  return {
    name: `${spans ? 'baseline' : 'baseline (no spans)'}${storageKind === 'sqlite' ? '' : ' (null storage)'}`,
    async rep(turns) {
      const storage = makeStorage(storageKind);
      await storage.migrate();
      const loop = new BareLoop({ storage, model: stepModel(toolSteps), tool: readTool(), spans, maxModelCalls: 50 });
      let updates = 0;
      loop.updates.subscribe(() => (updates += 1));
      const sessions: string[] = [];
      for (let i = 0; i < turns; i++) sessions.push(await loop.createSession());
      await storage.idle();
      const writesBefore = storage.writes;
      const started = performance.now();
      for (const sessionId of sessions) await loop.runTurn(sessionId, 'read the files');
      await storage.idle();
      const elapsed = performance.now() - started;
      const writes = storage.writes - writesBefore;
      await storage.close();
      return { usPerStep: (elapsed * 1000) / (turns * (toolSteps + 1)), updates: updates / turns, writes: writes / turns };
    },
  };
}

export interface SideStats {
  name: string;
  samples: number[];
  median: number;
  updatesPerTurn: number;
  writesPerTurn: number;
}

/** Warm-up, then `reps` rounds in alternating order so drift (GC, JIT, other load) does not favour one side. */
export async function compareSides(sides: Side[], options: { turnsPerRep: number; warmupReps: number; reps: number }): Promise<SideStats[]> {
  for (let i = 0; i < options.warmupReps; i++) for (const side of sides) await side.rep(options.turnsPerRep);
  const stats = sides.map((side) => ({ name: side.name, samples: [] as number[], median: Number.NaN, updatesPerTurn: 0, writesPerTurn: 0 }));
  for (let i = 0; i < options.reps; i++) {
    const order = i % 2 === 0 ? sides.map((_, k) => k) : sides.map((_, k) => sides.length - 1 - k);
    for (const k of order) {
      const r = await sides[k]!.rep(options.turnsPerRep);
      stats[k]!.samples.push(r.usPerStep);
      stats[k]!.updatesPerTurn = r.updates;
      stats[k]!.writesPerTurn = r.writes;
    }
  }
  for (const s of stats) s.median = median(s.samples);
  return stats;
}

export interface StepOverheadResult {
  runtime: SideStats;
  baseline: SideStats;
  /** Informational: the baseline without the trace-span writes. */
  baselineNoSpans: SideStats;
  ratio: number;
  /** Median of per-round ratios (both sides ran back to back): steadier when the machine's speed drifts. */
  pairedRatio: number;
  ratioNoSpans: number;
  /** Informational, null storage on both sides: orchestration cost alone. */
  orchestration: { runtime: SideStats; baseline: SideStats; ratio: number } | null;
}

export async function measureStepOverhead(options: StepOverheadOptions & { orchestrationReps?: number }): Promise<StepOverheadResult> {
  const [runtime, baseline, baselineNoSpans] = await compareSides(
    [runtimeSide(options.toolSteps), baselineSide(options.toolSteps, true), baselineSide(options.toolSteps, false)],
    options,
  );
  let orchestration: StepOverheadResult['orchestration'] = null;
  if (options.orchestrationReps) {
    const [r, b] = await compareSides([runtimeSide(options.toolSteps, 'null'), baselineSide(options.toolSteps, true, 'null')], {
      turnsPerRep: options.turnsPerRep,
      warmupReps: 5,
      reps: options.orchestrationReps,
    });
    orchestration = { runtime: r!, baseline: b!, ratio: r!.median / b!.median };
  }
  return {
    runtime: runtime!,
    baseline: baseline!,
    baselineNoSpans: baselineNoSpans!,
    ratio: runtime!.median / baseline!.median,
    pairedRatio: median(runtime!.samples.map((r, i) => r / baseline!.samples[i]!)),
    ratioNoSpans: runtime!.median / baselineNoSpans!.median,
    orchestration,
  };
}
