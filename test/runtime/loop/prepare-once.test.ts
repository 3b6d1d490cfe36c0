import { afterEach, describe, expect, it, vi } from 'vitest';
import * as engine from '../../../src/context/engine.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

// Counts every request copy the runtime builds, by wrapping the one assembly function.
vi.mock('../../../src/context/engine.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../src/context/engine.js')>();
  return { ...original, prepare: vi.fn(original.prepare) };
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

describe('the request copy (CW-1, issue 3 performance note)', () => {
  it('is built once per model call', async () => {
    h = await harness([
      { text: 'a', toolCalls: [{ name: 'read_file', args: { path: '1' } }] },
      { text: 'b', toolCalls: [{ name: 'read_file', args: { path: '2' } }] },
      { text: 'done' },
    ]);
    vi.mocked(engine.prepare).mockClear();
    await runTurn(h.session, 'go');
    expect(h.model.requests).toHaveLength(3);
    expect(vi.mocked(engine.prepare)).toHaveBeenCalledTimes(3);
  });
});
