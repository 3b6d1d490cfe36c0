/**
 * `step_overhead_ratio`: wall time per model step of the runtime versus the bare loop of
 * bare-loop.ts, both on their own `sqliteStorage(':memory:')`, the same zero-latency model and
 * the same read tool. Sessions are created outside the timed region; a timed repetition runs
 * `turns` sequential turns (one per fresh session, so the conversation never grows across
 * repetitions) and then waits for background writes (the runtime's trace queue) to land.
 */
import { createRuntime, sqliteStorage, type Runtime, type SessionHandle } from '../src/index.js';
import { BareLoop } from './bare-loop.js';
import { median, readTool, stepModel, TrackedStorage } from './common.js';

export interface StepOverheadOptions {
  /** Tool steps per turn; each turn makes `toolSteps + 1` model calls. */
  toolSteps: number;
  turnsPerRep: number;
  warmupReps: number;
  reps: number;
}

export interface StepOverheadResult {
  runtimeUsPerStep: number;
  baselineUsPerStep: number;
  baselineNoSpansUsPerStep: number;
  ratio: number;
  ratioNoSpans: number;
  runtimeSamples: number[];
  baselineSamples: number[];
  updatesPerTurn: { runtime: number; baseline: number };
  writesPerTurn: { runtime: number; baseline: number };
}

interface Side {
  name: string;
  rep(turns: number): Promise<{ usPerStep: number; updates: number; writes: number }>;
}

export async function runtimeSide(toolSteps: number): Promise<Side & { runtime: Runtime }> {
  const storage = new TrackedStorage(sqliteStorage({ filename: ':memory:' }));
  const runtime = await createRuntime({
    storage,
    model: stepModel(toolSteps),
    tools: [readTool()],
    agents: { default: { maxModelCalls: 50 } },
  });
  return {
    name: 'runtime',
    runtime,
    async rep(turns) {
      const sessions: SessionHandle[] = [];
      let updates = 0;
      for (let i = 0; i < turns; i++) {
        const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
        session.updates$.subscribe(() => (updates += 1));
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
      await storage.idle();
      const elapsed = performance.now() - started;
      return { usPerStep: (elapsed * 1000) / (turns * (toolSteps + 1)), updates: updates / turns, writes: (storage.writes - writesBefore) / turns };
    },
  };
}

export function baselineSide(toolSteps: number, spans: boolean): Side {
  const storage = new TrackedStorage(sqliteStorage({ filename: ':memory:' }));
  const loop = new BareLoop({ storage, model: stepModel(toolSteps), tool: readTool(), spans, maxModelCalls: 50 });
  let updates = 0;
  loop.updates.subscribe(() => (updates += 1));
  let migrated: Promise<void> | null = null;
  return {
    name: spans ? 'baseline' : 'baseline (no spans)',
    async rep(turns) {
      migrated ??= storage.migrate();
      await migrated;
      const sessions: string[] = [];
      for (let i = 0; i < turns; i++) sessions.push(await loop.createSession());
      await storage.idle();
      const updatesBefore = updates;
      const writesBefore = storage.writes;
      const started = performance.now();
      for (const sessionId of sessions) await loop.runTurn(sessionId, 'read the files');
      await storage.idle();
      const elapsed = performance.now() - started;
      return {
        usPerStep: (elapsed * 1000) / (turns * (toolSteps + 1)),
        updates: (updates - updatesBefore) / turns,
        writes: (storage.writes - writesBefore) / turns,
      };
    },
  };
}

export async function measureStepOverhead(options: StepOverheadOptions): Promise<StepOverheadResult> {
  const runtime = await runtimeSide(options.toolSteps);
  const baseline = baselineSide(options.toolSteps, true);
  const noSpans = baselineSide(options.toolSteps, false);
  const sides = [runtime, baseline, noSpans];
  for (let i = 0; i < options.warmupReps; i++) for (const side of sides) await side.rep(options.turnsPerRep);

  const samples = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  const last = new Map<string, { updates: number; writes: number }>();
  for (let i = 0; i < options.reps; i++) {
    // Alternate the order so drift (GC, JIT, table growth) does not favour one side.
    const order = i % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const r = await side.rep(options.turnsPerRep);
      samples.get(side.name)!.push(r.usPerStep);
      last.set(side.name, r);
    }
  }
  await runtime.runtime.shutdown();

  const runtimeSamples = samples.get(runtime.name)!;
  const baselineSamples = samples.get(baseline.name)!;
  const runtimeUsPerStep = median(runtimeSamples);
  const baselineUsPerStep = median(baselineSamples);
  const baselineNoSpansUsPerStep = median(samples.get(noSpans.name)!);
  return {
    runtimeUsPerStep,
    baselineUsPerStep,
    baselineNoSpansUsPerStep,
    ratio: runtimeUsPerStep / baselineUsPerStep,
    ratioNoSpans: runtimeUsPerStep / baselineNoSpansUsPerStep,
    runtimeSamples,
    baselineSamples,
    updatesPerTurn: { runtime: last.get(runtime.name)!.updates, baseline: last.get(baseline.name)!.updates },
    writesPerTurn: { runtime: last.get(runtime.name)!.writes, baseline: last.get(baseline.name)!.writes },
  };
}
