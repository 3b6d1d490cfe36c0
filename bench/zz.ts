import { baselineSide, compareSides, runtimeSide } from './step-overhead.js';
const stats = await compareSides([runtimeSide(10, 'null'), baselineSide(10, true, 'null')], { turnsPerRep: 20, warmupReps: 20, reps: 10 });
console.log(process.env.SKIP_WS, stats.map((s) => `${s.name} ${Math.round(s.median)}`).join(' | '));
