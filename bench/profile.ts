/**
 * A profiling driver, not part of `npm run bench`: runs one side of the step-overhead benchmark
 * for a while so a CPU profile has enough samples, e.g.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile.ts runtime 40
 *
 * and open the .cpuprofile in Chrome DevTools (Performance panel) or any cpuprofile viewer.
 *
 * Sides: `runtime`, `baseline`, `baseline-nospans`. Then the number of reps, then the storage:
 * `sqlite` (default) or `null` (no database: orchestration cost only).
 */
import { baselineSide, runtimeSide, type StorageKind } from './step-overhead.js';

const which = process.argv[2] ?? 'runtime';
const reps = Number(process.argv[3] ?? 40);
const storage = (process.argv[4] ?? 'sqlite') as StorageKind;
const toolSteps = 10;
const side = which === 'runtime' ? runtimeSide(toolSteps, storage) : baselineSide(toolSteps, which !== 'baseline-nospans', storage);
const samples: number[] = [];
for (let i = 0; i < reps; i++) samples.push((await side.rep(20)).usPerStep);
console.log(`${side.name}: µs/step per rep ${samples.map((s) => Math.round(s)).join(', ')}`);
