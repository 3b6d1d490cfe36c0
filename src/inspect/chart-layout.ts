import type { ELK } from 'elkjs/lib/elk-api.js';
import type { AnyStateMachine } from 'xstate';
import { sessionMachine } from '../../machines/session.machine.js';
import { stallWatchdogMachine } from '../../machines/stall-watchdog.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';
import { turnMachine } from '../../machines/turn.machine.js';
import { chartGraph } from './chart-graph.js';
import { layoutGraph } from './chart-elk.js';
import type { ChartLayout } from './chart-types.js';

export type { ChartLayout };

/**
 * ELK, loaded on first use: it is 1.5 MB of JavaScript that a host whose page is never opened
 * should not parse at startup. elkjs is CommonJS: its constructor is `module.exports`, which
 * TypeScript types as the module.
 */
async function loadElk(): Promise<ELK> {
  const module = (await import('elkjs/lib/elk.bundled.js')) as { default?: unknown };
  const Elk = ((module.default as { default?: unknown } | undefined)?.default ?? module.default ?? module) as new () => ELK;
  return new Elk();
}

/** The charts whose actors a session runs. */
const CHARTS: readonly AnyStateMachine[] = [sessionMachine, turnMachine, toolCallMachine, stallWatchdogMachine];

let cached: Promise<ChartLayout[]> | null = null;

/**
 * The charts laid out, computed on first use and kept for the life of the process: they never change
 * while the host runs, and every page starts from the same picture. The page lays a chart out again
 * (with the same rules, chart-elk.ts) only when it folds compound states away from the active one.
 */
export function chartLayouts(): Promise<ChartLayout[]> {
  cached ??= loadElk().then((elk) => Promise.all(CHARTS.map((machine) => layoutGraph(elk, chartGraph(machine)))));
  // A failed layout is not cached: the next page asks again.
  cached.catch(() => (cached = null));
  return cached;
}
