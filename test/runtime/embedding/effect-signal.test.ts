import { describe, expect, it } from 'vitest';
import { EffectSignal } from '../../../src/runtime/effect-signal.js';

describe('EffectSignal (an effect signal made on first read)', () => {
  it('aborts a signal that was already read, firing its listeners', () => {
    const effect = new EffectSignal();
    const signal = effect.signal;
    let fired = 0;
    signal.addEventListener('abort', () => (fired += 1));
    expect(effect.aborted).toBe(false);
    effect.abort();
    expect(effect.aborted).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(fired).toBe(1);
    expect(effect.signal).toBe(signal);
  });

  it('hands out an already aborted signal when it is first read after the cancel', () => {
    const effect = new EffectSignal();
    effect.abort();
    expect(effect.signal.aborted).toBe(true);
    expect(() => effect.signal.throwIfAborted()).toThrow();
  });
});
