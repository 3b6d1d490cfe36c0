import { describe, expect, it, vi } from 'vitest';
import { orderedUuid } from '../../../src/runtime/ordered-id.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('orderedUuid', () => {
  it('is a version 7 UUID whose first 48 bits are the millisecond', async () => {
    // A process's first id: a fresh copy of the module, whose clock has not been moved on by ids other
    // tests in this worker made.
    vi.resetModules();
    const fresh = await import('../../../src/runtime/ordered-id.js');
    const id = fresh.orderedUuid(0x0123_4567_89ab);
    expect(id).toMatch(V7);
    expect(id.slice(0, 13)).toBe('01234567-89ab');
  });

  it('increases strictly, also within one millisecond, past the 12-bit counter and when the clock goes back', () => {
    const start = Date.now() + 1_000_000;
    const ids = [
      ...Array.from({ length: 5_000 }, () => orderedUuid(start)),
      orderedUuid(start - 10),
      orderedUuid(start + 5_000),
    ];
    for (const id of ids) expect(id).toMatch(V7);
    const sorted = [...ids].sort();
    expect(sorted).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
