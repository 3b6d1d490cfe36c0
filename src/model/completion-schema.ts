import { z } from 'zod';
import type { CompletedCall } from './consume-stream.js';

/**
 * What a model port hands the runtime besides text and tool calls, checked at that boundary: the
 * usage is summed into outcomes and the provider data is stored and sent back, so both must be
 * plain, well-formed JSON. Checked only when present, so ports that report neither pay nothing.
 */
const count = z.number().int().nonnegative();

const tokenUsageSchema = z.object({ inputTokens: count, outputTokens: count, cachedInputTokens: count, reasoningTokens: count }).strict();

const providerMetadataSchema = z.record(z.string(), z.record(z.string(), z.json()));

const contentBlockSchema = z.union([
  z.object({ type: z.enum(['text', 'reasoning']), text: z.string(), providerMetadata: providerMetadataSchema.optional() }).strict(),
  z.object({ type: z.literal('tool_call'), index: count }).strict(),
]);

const providerDataSchema = z.object({ blocks: z.array(contentBlockSchema) }).strict();

/** What is wrong with the call's usage or provider data, if anything. */
export function malformedCompletion({ response, usage }: CompletedCall): string | undefined {
  if (usage !== undefined && !tokenUsageSchema.safeParse(usage).success) return 'the reported usage is not four non-negative token counts';
  if (response.providerData !== undefined) {
    const data = providerDataSchema.safeParse(response.providerData);
    if (!data.success) return `the response's provider data is not valid: ${z.prettifyError(data.error)}`;
    const calls = response.toolCalls.length;
    if (data.data.blocks.some((block) => block.type === 'tool_call' && block.index >= calls)) return "the response's provider data names a tool call it does not have";
  }
  for (const call of response.toolCalls) {
    if (call.providerMetadata !== undefined && !providerMetadataSchema.safeParse(call.providerMetadata).success) {
      return `the provider metadata of tool call '${call.id}' is not JSON`;
    }
  }
  return undefined;
}
