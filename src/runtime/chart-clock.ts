import type { ActorOptions, AnyActorLogic } from 'xstate';

/** The clock XState schedules delayed transitions on (e.g. `SimulatedClock`); hook time limits run on it too. */
export type ChartClock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;

/** Wall-clock timers, as XState uses them when no clock is given. */
export const REAL_CLOCK: ChartClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};
