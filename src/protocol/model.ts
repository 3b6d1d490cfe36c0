import type { DataBlock, ModelVisibleStatus, ToolCallPart } from './messages.js';
import type { AssistantProviderData } from './provider-data.js';
import type { TokenUsage } from './usage.js';

/** A provider-agnostic model request: system parts, conversation, tool surface (CW-1, CW-6). */
export interface ModelRequest {
  system: SystemPart[];
  messages: RequestMessage[];
  tools: ToolDefinition[];
  maxOutputTokens: number;
}

export interface SystemPart {
  key: string;
  content: string;
}

export type RequestMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; reasoning: string; toolCalls: ToolCallPart[]; providerData?: AssistantProviderData }
  | { role: 'tool'; toolCallId: string; toolName: string; status: ModelVisibleStatus; content: string; data?: DataBlock[] };

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  inputSchema: unknown;
}

export interface ModelCapabilities {
  contextWindow: number;
  maxOutputTokens: number;
  maxReasoningTokens: number;
  /** Whether the model takes data blocks (images, files) in tool results; absent means it does not. */
  dataBlocks?: boolean;
}

/** Why the provider ended a response; `length` means it hit the output limit. */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls' | 'other';

/** A completed response: the only source of tool calls (RT-18). */
export interface ModelResponse {
  text: string;
  reasoning: string;
  toolCalls: ToolCallPart[];
  /** Provider-opaque data to store with the assistant message and send back (RT-18). */
  providerData?: AssistantProviderData;
  finishReason?: FinishReason;
}

export type ModelStreamEvent =
  | { type: 'text_delta'; text: string }
  | { type: 'reasoning_delta'; text: string }
  /** `usage`: the tokens this call cost, when the provider reports them; `responseModel`: the model that answered, when it says. */
  | { type: 'response_completed'; response: ModelResponse; usage?: TokenUsage; responseModel?: string };

export interface ModelCallOptions {
  signal: AbortSignal;
}

export interface ModelIdentity {
  provider: string;
  model: string;
}

/** What the runtime needs from a model provider. */
export interface ModelPort {
  readonly capabilities: ModelCapabilities;
  /** Who serves the model, for traces and metrics (issue 27): e.g. `{ provider: 'openai', model: 'gpt-4.1' }`. */
  readonly identity?: ModelIdentity;
  stream(request: ModelRequest, options: ModelCallOptions): AsyncIterable<ModelStreamEvent>;
}

export type ModelErrorKind = 'provider' | 'overflow' | 'protocol';

/** Thrown by a model port; the runtime maps it to a turn failure code. */
export class ModelCallError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    /** RT-18: set once a text, reasoning or tool-call event has arrived. */
    readonly semanticOutputProduced = false,
  ) {
    super(message);
    this.name = 'ModelCallError';
  }
}
