import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withDeadline } from '../../src/util/deadline.js';

describe('withDeadline', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('settles with the work when it finishes first, leaving no timer behind', async () => {
    const result = withDeadline(Promise.resolve('read'), 2_000, () => 'late');
    expect(await result).toBe('read');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('settles with the late value once the deadline passes, and not a moment before', async () => {
    let settled: string | undefined;
    const result = withDeadline(new Promise<string>(() => undefined), 2_000, () => 'late').then((value) => (settled = value));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await result;
    expect(settled).toBe('late');
  });

  it('ignores a rejection that comes after the deadline', async () => {
    let fail: (error: Error) => void = () => undefined;
    const work = new Promise<string>((_, reject) => (fail = reject));
    const result = withDeadline(work, 10, () => 'late');
    await vi.advanceTimersByTimeAsync(10);
    expect(await result).toBe('late');
    fail(new Error('too late to matter'));
    await vi.advanceTimersByTimeAsync(0);
  });
});
