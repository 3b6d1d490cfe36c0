import { describe, expect, it } from 'vitest';
import { contextLimits, reachesCompactionLine, type ModelContextLimits } from '../../src/index.js';
import { SUMMARY_OUTPUT_LIMIT } from '../../src/context/limits.js';

describe('contextLimits (CW-7)', () => {
  it("reproduces the seed's example: 200 000 window, 32 000 output, no reasoning", () => {
    expect(contextLimits({ contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 0 })).toEqual({
      effectiveInputTokens: 168_000,
      autoCompactTokenLimit: 142_800,
      reservedOutputTokens: 32_000,
    });
  });

  it('subtracts the reasoning tokens from the usable input', () => {
    expect(contextLimits({ contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 8_000 })).toEqual({
      effectiveInputTokens: 160_000,
      autoCompactTokenLimit: 136_000,
      reservedOutputTokens: 32_000,
    });
  });

  it('rounds the line up: ceil(85 % × effective input)', () => {
    // effective 7 → 5.95 → 6; effective 101 → 85.85 → 86
    expect(contextLimits({ contextWindow: 1_007, maxOutputTokens: 1_000, maxReasoningTokens: 0 }).autoCompactTokenLimit).toBe(6);
    expect(contextLimits({ contextWindow: 1_201, maxOutputTokens: 1_000, maxReasoningTokens: 100 }).autoCompactTokenLimit).toBe(86);
  });

  it('caps the summary output at 16 384 tokens', () => {
    expect(SUMMARY_OUTPUT_LIMIT).toBe(16_384);
  });
});

describe('reachesCompactionLine (CW-7)', () => {
  const seed = contextLimits({ contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 0 });

  it('triggers exactly when estimate + reserved output reaches the line (142 800 − 32 000 = 110 800)', () => {
    expect(reachesCompactionLine(110_799, seed)).toBe(false);
    expect(reachesCompactionLine(110_800, seed)).toBe(true);
    expect(reachesCompactionLine(110_801, seed)).toBe(true);
    expect(reachesCompactionLine(0, seed)).toBe(false);
  });

  it('uses the usable input when it is below the line', () => {
    const limits: ModelContextLimits = { effectiveInputTokens: 1_000, autoCompactTokenLimit: 5_000, reservedOutputTokens: 100 };
    expect(reachesCompactionLine(899, limits)).toBe(false);
    expect(reachesCompactionLine(900, limits)).toBe(true);
    expect(reachesCompactionLine(901, limits)).toBe(true);
  });

  it('uses the line when it is below the usable input', () => {
    const limits: ModelContextLimits = { effectiveInputTokens: 5_000, autoCompactTokenLimit: 1_000, reservedOutputTokens: 100 };
    expect(reachesCompactionLine(899, limits)).toBe(false);
    expect(reachesCompactionLine(900, limits)).toBe(true);
  });

  it('counts reasoning through the smaller line', () => {
    const withReasoning = contextLimits({ contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 8_000 });
    // line 136 000 − reserved 32 000
    expect(reachesCompactionLine(103_999, withReasoning)).toBe(false);
    expect(reachesCompactionLine(104_000, withReasoning)).toBe(true);
  });
});
