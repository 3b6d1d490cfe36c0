import { describe, expect, it } from 'vitest';
import { MAX_HOLD_MS, WriteBatch } from '../../src/host/write-batch.js';

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('atWriteTime: the socket writes of one turn of the event loop go out together', () => {
  it('holds the writes of several tasks until the check phase, in order', async () => {
    // A clock that stands still: on a loaded machine the real one could pass MAX_HOLD_MS between two holds and let them out early.
    const batch = new WriteBatch(() => 0);
    const atWriteTime = (job: () => void) => batch.hold(job);
    const done: string[] = [];
    atWriteTime(() => done.push('a'));
    await Promise.resolve();
    atWriteTime(() => done.push('b'));
    process.nextTick(() => atWriteTime(() => done.push('c')));
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(done).toEqual([]);
    await immediate();
    expect(done).toEqual(['a', 'b', 'c']);
    // The next turn's writes wait for the next check phase.
    atWriteTime(() => done.push('d'));
    expect(done).toEqual(['a', 'b', 'c']);
    await immediate();
    expect(done).toEqual(['a', 'b', 'c', 'd']);
  });

  it('lets everything out at the end of a task once the first write has waited too long', async () => {
    let now = 1_000;
    const batch = new WriteBatch(() => now);
    const done: string[] = [];
    batch.hold(() => done.push('first'));
    now += MAX_HOLD_MS - 0.5;
    batch.hold(() => done.push('soon'));
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(done).toEqual([]);
    now += 1;
    batch.hold(() => done.push('late'));
    expect(done).toEqual([]);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(done).toEqual(['first', 'soon', 'late']);
    // Nothing is written twice when the check phase comes.
    await immediate();
    expect(done).toEqual(['first', 'soon', 'late']);
  });
});
