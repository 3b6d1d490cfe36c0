import { describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage } from '../../../src/index.js';
import { SYSTEM_PART_TOKEN_LIMIT } from '../../../src/protocol/item-limits.js';
import { estimateTokens } from '../../../src/protocol/token-estimate.js';

describe('a system context over its limit is refused when the agent is configured (CW-8)', () => {
  it('refuses a prompt that fits alone but not with the tool rules, at createRuntime rather than at the first model call', async () => {
    // Just under the limit alone (the estimate is a token per four bytes of JSON, quotes included).
    const prompt = 'p'.repeat((SYSTEM_PART_TOKEN_LIMIT - 1) * 4 - 2);
    expect(estimateTokens(prompt)).toBe(SYSTEM_PART_TOKEN_LIMIT - 1);
    await expect(
      createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]), agents: { long: { systemPrompt: prompt } } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions', message: expect.stringContaining("system context of agent 'long' (its prompt and the tool rules)") });
    // With room for the rules it is accepted.
    const fits = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]), agents: { long: { systemPrompt: prompt.slice(0, -2_000) } } });
    await fits.shutdown();
  });
});
