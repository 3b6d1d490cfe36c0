import { SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { RunningTime, runningTimeOf } from '../../src/tasks/running-time.js';

/** LC-4's max duration over RUNNING time only: the meter behind the task chart's running clock, and what a worker reads back. */

const changed = (to: string, at: number, from = 'X') => ({ eventType: 'state_changed', data: { from_state: from, to_state: to }, createdAtMs: at });
const other = (at: number) => ({ eventType: 'progress', data: { stage: 'turn_started' }, createdAtMs: at });

describe('runningTimeOf: the RUNNING time a task’s stored events account for', () => {
  it('sums the stretches from each change into RUNNING to the next change out of it', () => {
    const events = [changed('RUNNING', 1_000, 'PENDING'), other(1_500), changed('PAUSED', 4_000), changed('RUNNING', 100_000), changed('COMPLETED', 102_000)];
    expect(runningTimeOf(events, 500_000)).toBe(3_000 + 2_000);
  });

  it('counts a stretch still open up to now — the time a dead worker left the task RUNNING too — and a recovery goes on with it', () => {
    const events = [changed('RUNNING', 1_000, 'PENDING'), changed('RUNNING', 9_000, 'RUNNING')];
    expect(runningTimeOf(events, 10_000)).toBe(9_000);
  });

  it('counts nothing for a task never RUNNING, or paused since', () => {
    expect(runningTimeOf([], 10_000)).toBe(0);
    expect(runningTimeOf([changed('REJECTED', 1_000, 'PENDING')], 10_000)).toBe(0);
    expect(runningTimeOf([changed('RUNNING', 1_000), changed('PAUSED', 2_000), changed('PAUSED', 5_000, 'PAUSED')], 10_000)).toBe(1_000);
  });
});

describe('RunningTime: the running clock', () => {
  it('calls back once the budget is spent over the stretches it ran, not the time between them', () => {
    const clock = new SimulatedClock();
    const time = new RunningTime(10_000, 0, clock, () => clock.now());
    let spent = 0;
    const stop = time.run(() => (spent += 1));
    clock.increment(6_000);
    stop();
    clock.increment(1_000_000);
    expect(spent).toBe(0);
    expect(time.spent).toBe(6_000);
    time.run(() => (spent += 1));
    clock.increment(3_999);
    expect(spent).toBe(0);
    clock.increment(1);
    expect(spent).toBe(1);
  });

  it('starts from what a recovered task had spent, and fires at once (within a millisecond) when that is all of it', () => {
    const clock = new SimulatedClock();
    let spent = 0;
    new RunningTime(10_000, 12_000, clock, () => clock.now()).run(() => (spent += 1));
    clock.increment(1);
    expect(spent).toBe(1);
  });
});
