import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { TurnchartError } from '../protocol/errors.js';
import type { ModelCapabilities, ModelPort } from '../protocol/model.js';
import { aiSdkModel, type AiSdkModelOptions } from './ai-sdk-model.js';

/** How a host reaches a real provider; everything but the spec comes from flags or the environment. */
export interface ProviderSettings {
  /** Sent as `Authorization: Bearer …`; none for a local server that wants none. */
  apiKey?: string;
  capabilities?: Partial<ModelCapabilities>;
  maxRetries?: number;
  stallTimeoutMs?: number;
  /**
   * The name provider metadata is keyed by. `google` for Gemini's OpenAI-compatible endpoint: the
   * AI SDK package sends Gemini's thought signatures back only under that name.
   */
  providerName?: string;
}

const targetSchema = z.object({
  baseURL: z.url({ protocol: /^https?$/, error: 'the base URL must be an http(s) URL' }),
  modelId: z.string().min(1, 'a model id must follow the #'),
});

/**
 * `openai-compatible:BASE_URL#MODEL` — any server speaking OpenAI's `/chat/completions` with
 * streaming (OpenAI, vLLM, Ollama, LM Studio, gateways), through `@ai-sdk/openai-compatible`.
 */
export function openAiCompatibleModel(target: string, settings: ProviderSettings = {}): { model: ModelPort; description: string } {
  const hash = target.lastIndexOf('#');
  const parsed = targetSchema.safeParse({ baseURL: hash < 0 ? target : target.slice(0, hash), modelId: hash < 0 ? '' : target.slice(hash + 1) });
  if (!parsed.success) {
    throw new TurnchartError('InvalidOptions', `--model openai-compatible:${target}: ${z.prettifyError(parsed.error)} (expected openai-compatible:BASE_URL#MODEL)`);
  }
  const { baseURL, modelId } = parsed.data;
  const provider = createOpenAICompatible({
    name: settings.providerName ?? 'openai-compatible',
    baseURL,
    ...(settings.apiKey && { apiKey: settings.apiKey }),
    // Asks for usage in the stream's last chunk (`stream_options.include_usage`).
    includeUsage: true,
  });
  const options: AiSdkModelOptions = {
    ...(settings.capabilities && { capabilities: settings.capabilities }),
    ...(settings.maxRetries !== undefined && { maxRetries: settings.maxRetries }),
    ...(settings.stallTimeoutMs !== undefined && { stallTimeoutMs: settings.stallTimeoutMs }),
  };
  return { model: aiSdkModel(provider.chatModel(modelId), options), description: `${modelId} at ${baseURL} (OpenAI-compatible)` };
}
