/**
 * `step_overhead_ratio`: wall time per model step of the runtime versus the bare loop of
 * bare-loop.ts, both on their own `sqliteStorage(':memory:')`, the same zero-latency model and
 * the same read tool. Storage, runtime and sessions are created outside the timed region; a timed
 * repetition runs `turns` sequential turns (one per fresh session, so the conversation never grows
 * across repetitions) and then waits for background writes (the runtime's trace queue) to land.
 */
import { createRuntime, sqliteStorage, type SessionHandle, type SessionStorage } from '../src/index.js';
import { BareLoop } from './bare-loop.js';
import { median, NullStorage, readTool, stepModel, TrackedStorage } from './common.js';

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

export type StorageKind = 'sqlite' | 'null';

function makeStorage(kind: StorageKind): TrackedStorage {
  const inner: SessionStorage = kind === 'sqlite' ? sqliteStorage({ filename: ':memory:' }) : new NullStorage();
  return new TrackedStorage(inner);
}

/**
 * The runtime side. Every repetition gets a fresh storage and runtime (set up and shut down outside
 * the timed region), so sessions left open by earlier repetitions do not weigh on later ones.
 */
export function runtimeSide(toolSteps: number, storageKind: StorageKind = 'sqlite'): Side {
  return {
    name: 'runtime',
    async rep(turns) {
      const storage = makeStorage(storageKind);
      const runtime = await createRuntime({
        storage,
        model: stepModel(toolSteps),
        tools: [readTool()],
        agents: { default: { maxModelCalls: 50 } },
      });
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
      const writes = storage.writes - writesBefore;
      await runtime.shutdown();
      return { usPerStep: (elapsed * 1000) / (turns * (toolSteps + 1)), updates: updates / turns, writes: writes / turns };
    },
  };
}

/** The bare-loop side; like the runtime side, a fresh storage per repetition. */
export function baselineSide(toolSteps: number, spans: boolean, storageKind: StorageKind = 'sqlite'): Side {
  return {
    name: spans ? 'baseline' : 'baseline (no spans)',
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

export async function measureStepOverhead(options: StepOverheadOptions): Promise<StepOverheadResult> {
  const runtime = runtimeSide(options.toolSteps);
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
