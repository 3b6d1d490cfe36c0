import type { LanguageModelV3FinishReason, LanguageModelV3StreamPart, LanguageModelV3Usage, SharedV3ProviderMetadata } from '@ai-sdk/provider';
import type { ToolCallPart } from '../protocol/messages.js';
import { ModelCallError, type FinishReason, type ModelResponse, type ModelStreamEvent } from '../protocol/model.js';
import { jsonCopy, type ContentBlock, type ProviderMetadata } from '../protocol/provider-data.js';
import type { TokenUsage } from '../protocol/usage.js';

type TextBlock = Extract<ContentBlock, { type: 'text' | 'reasoning' }>;

/**
 * Builds one response from AI SDK stream parts: deltas pass through as they come, tool calls are
 * taken only from complete `tool-call` parts (never `tool-input-*` streaming, so a half-streamed
 * call can never reach a tool, RT-18), and the metadata a provider puts on text, reasoning and
 * tool-call parts is kept in order, to be sent back exactly (RT-18). Like the AI SDK itself, a
 * block's metadata is the last one any of its parts carried.
 */
export class ResponseAssembler {
  /** Set at the first text, reasoning or tool-call part (RT-18). */
  semantic = false;
  private text = '';
  private reasoning = '';
  private readonly blocks: ContentBlock[] = [];
  private readonly open = new Map<string, TextBlock>();
  private readonly toolCalls: ToolCallPart[] = [];
  /** The model the provider says answered (issue 27). */
  private responseModel: string | undefined;

  /** The event a part becomes, if any; the completion on `finish`. Throws the provider's error part. */
  accept(part: LanguageModelV3StreamPart): ModelStreamEvent | undefined {
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
        this.block(part.type === 'text-start' ? 'text' : 'reasoning', part.id, part.providerMetadata);
        return undefined;
      case 'text-delta':
        this.semantic = true;
        this.text += part.delta;
        this.block('text', part.id, part.providerMetadata).text += part.delta;
        return { type: 'text_delta', text: part.delta };
      case 'reasoning-delta':
        this.semantic = true;
        this.reasoning += part.delta;
        this.block('reasoning', part.id, part.providerMetadata).text += part.delta;
        return { type: 'reasoning_delta', text: part.delta };
      case 'text-end':
      case 'reasoning-end':
        this.block(part.type === 'text-end' ? 'text' : 'reasoning', part.id, part.providerMetadata);
        this.open.delete(`${part.type === 'text-end' ? 'text' : 'reasoning'}:${part.id}`);
        return undefined;
      case 'tool-call':
        // A provider-executed call (e.g. hosted web search) is not ours to run.
        if (part.providerExecuted) return undefined;
        this.semantic = true;
        this.blocks.push({ type: 'tool_call', index: this.toolCalls.length });
        this.toolCalls.push({
          id: part.toolCallId,
          name: part.toolName,
          argumentsText: part.input,
          ...(part.providerMetadata && { providerMetadata: metadata(part.providerMetadata) }),
        });
        return undefined;
      case 'response-metadata':
        if (part.modelId) this.responseModel = part.modelId;
        return undefined;
      case 'error':
        throw part.error;
      case 'finish':
        return this.completion(part.finishReason, part.usage);
      default:
        return undefined;
    }
  }

  private completion(reason: LanguageModelV3FinishReason, usage: LanguageModelV3Usage): ModelStreamEvent {
    if (reason.unified === 'error') throw new ModelCallError('provider', `the provider ended the response with an error (${reason.raw ?? 'no reason given'})`, this.semantic);
    const response: ModelResponse = { text: this.text, reasoning: this.reasoning, toolCalls: this.toolCalls, finishReason: finishReason(reason) };
    const blocks = this.blocks.filter((block) => block.type === 'tool_call' || block.text !== '' || block.providerMetadata);
    // Only metadata on text or reasoning needs the blocks: the flat fields say everything else.
    if (blocks.some((block) => block.type !== 'tool_call' && block.providerMetadata)) response.providerData = { blocks };
    const tokens = tokenUsage(usage);
    return { type: 'response_completed', response, ...(tokens && { usage: tokens }), ...(this.responseModel && { responseModel: this.responseModel }) };
  }

  /** The open block of this kind and id (opened now if its start part never came), its metadata updated. */
  private block(type: TextBlock['type'], id: string, providerMetadata: SharedV3ProviderMetadata | undefined): TextBlock {
    const key = `${type}:${id}`;
    let block = this.open.get(key);
    if (!block) {
      block = { type, text: '' };
      this.open.set(key, block);
      this.blocks.push(block);
    }
    if (providerMetadata) block.providerMetadata = metadata(providerMetadata);
    return block;
  }
}

/** Stored as plain JSON from the start, so the first request sends what a reload would. */
function metadata(value: SharedV3ProviderMetadata): ProviderMetadata {
  return jsonCopy(value) as ProviderMetadata;
}

const FINISH_REASONS: Record<Exclude<LanguageModelV3FinishReason['unified'], 'error'>, FinishReason> = {
  stop: 'stop',
  length: 'length',
  'content-filter': 'content_filter',
  'tool-calls': 'tool_calls',
  other: 'other',
};

function finishReason(reason: LanguageModelV3FinishReason): FinishReason {
  return FINISH_REASONS[reason.unified as keyof typeof FINISH_REASONS] ?? 'other';
}

/** The call's tokens; none when the provider reported no count at all. */
function tokenUsage(usage: LanguageModelV3Usage | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  const { inputTokens: input, outputTokens: output } = usage;
  const inputTokens = input.total ?? sum(input.noCache, input.cacheRead, input.cacheWrite);
  const outputTokens = output.total ?? sum(output.text, output.reasoning);
  if ([inputTokens, outputTokens, input.cacheRead, output.reasoning].every((n) => n === undefined)) return undefined;
  return { inputTokens: count(inputTokens), outputTokens: count(outputTokens), cachedInputTokens: count(input.cacheRead), reasoningTokens: count(output.reasoning) };
}

function sum(...values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length > 0 ? known.reduce((a, b) => a + b, 0) : undefined;
}

/** A provider's count as a usable one: a missing or nonsensical number counts as none. */
function count(value: number | undefined): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}
