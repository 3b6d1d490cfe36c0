/** RT-4, CW-7: the same rough estimate everywhere — a token per four bytes of JSON. */
export function estimateTokens(value: unknown): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(value), 'utf8') / 4);
}
