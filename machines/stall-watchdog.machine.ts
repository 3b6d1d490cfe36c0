import { sendParent, setup } from 'xstate';

/**
 * The no-progress watchdog (issue 12): invoked by the turn for as long as it runs. Every update the
 * turn emits is progress, which restarts the wait (the runtime sends `watchdog.progress`); waiting
 * for the user's approval pauses it. A wait that runs out sends the turn
 * `turn.interrupt { reason: 'timeout', limit: 'stall' }`, which the turn handles as it handles its
 * run's time limit — the model call or tool under way is cancelled — and ends `failed` / `stalled`. Off when the agent has no
 * `stallTimeoutMs`, so such a turn arms no timer.
 */

export const WATCHDOG = 'watchdog';

export interface StallWatchdogInput {
  timeoutMs: number | null;
}

export type StallWatchdogEvent = { type: 'watchdog.progress' } | { type: 'watchdog.pause' } | { type: 'watchdog.resume' };

export const stallWatchdogMachine = setup({
  types: {
    input: {} as StallWatchdogInput,
    context: {} as StallWatchdogInput,
    events: {} as StallWatchdogEvent,
  },
  delays: {
    /** Only entered when the agent has a stall timeout (`enabled`). */
    stallTimeout: ({ context }) => context.timeoutMs ?? 0,
  },
  guards: {
    enabled: ({ context }) => context.timeoutMs !== null,
  },
}).createMachine({
  id: 'stallWatchdog',
  context: ({ input }) => ({ timeoutMs: input.timeoutMs }),
  initial: 'arming',
  states: {
    arming: {
      always: [{ guard: 'enabled', target: 'watching' }, { target: 'off' }],
    },
    off: {},
    watching: {
      after: { stallTimeout: { target: 'stalled', actions: sendParent({ type: 'turn.interrupt', reason: 'timeout', limit: 'stall' }) } },
      on: {
        // Re-entering restarts the wait.
        'watchdog.progress': { target: 'watching', reenter: true },
        'watchdog.pause': { target: 'paused' },
      },
    },
    paused: {
      on: { 'watchdog.resume': { target: 'watching' } },
    },
    stalled: { type: 'final' },
  },
});
