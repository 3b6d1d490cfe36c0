import { randomUUID } from 'node:crypto';
import { ModelCallError, type ModelCallOptions, type ModelCapabilities, type ModelErrorKind, type ModelPort, type ModelRequest, type ModelStreamEvent } from '../protocol/model.js';
import type { ToolCallPart } from '../protocol/messages.js';
import type { TokenUsage } from '../protocol/usage.js';

/** A tool call the script asks for; `argumentsText` overrides `args` to send malformed JSON. */
export interface ScriptedToolCall {
  name: string;
  args?: unknown;
  argumentsText?: string;
  id?: string;
}

export type ScriptedReply =
  /** `usage`: what this call reports it cost (missing counts are 0); none reported without it. */
  | { text?: string; reasoning?: string; toolCalls?: ScriptedToolCall[]; deltas?: string[]; usage?: Partial<TokenUsage> }
  | { error: ModelErrorKind; message?: string; afterText?: string };

export type ScriptedStep = ScriptedReply | ((request: ModelRequest, options: ModelCallOptions) => ScriptedReply | Promise<ScriptedReply>);

export interface ScriptedModel extends ModelPort {
  /** Every request received, in order: what the model saw. */
  readonly requests: ModelRequest[];
  /** Steps not yet used. */
  readonly remaining: number;
}

export const DEFAULT_CAPABILITIES: ModelCapabilities = { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 };

/**
 * A model that answers from a script, one step per call — for tests, the demo and benchmarks.
 * Text is streamed as word deltas (or the given `deltas`); a step that is a function can wait,
 * and rejects when the call's signal aborts, so a waiting model call can be cancelled.
 */
export function scriptedModel(steps: ScriptedStep[], options: { capabilities?: Partial<ModelCapabilities> } = {}): ScriptedModel {
  const queue = [...steps];
  // An index rather than `shift`, which is linear in the script's length: long benchmark scripts measure the runtime, not the script.
  let next = 0;
  const requests: ModelRequest[] = [];
  return {
    capabilities: { ...DEFAULT_CAPABILITIES, ...options.capabilities },
    identity: { provider: 'scripted', model: 'scripted' },
    requests,
    get remaining() {
      return queue.length - next;
    },
    async *stream(request, callOptions) {
      requests.push(request);
      const step = next < queue.length ? queue[next++] : undefined;
      if (step === undefined) throw new ModelCallError('provider', 'the scripted model has no step left');
      const reply = typeof step === 'function' ? await untilAborted(step(request, callOptions), callOptions.signal) : step;
      yield* replay(reply);
    },
  };
}

/** A reply as a model stream: reasoning, then the text as word deltas, then the completed response. */
export function* replay(reply: ScriptedReply): Generator<ModelStreamEvent> {
  if ('error' in reply) {
    if (reply.afterText) yield { type: 'text_delta', text: reply.afterText };
    throw new ModelCallError(reply.error, reply.message ?? `scripted ${reply.error} error`, Boolean(reply.afterText));
  }
  const text = reply.text ?? '';
  if (reply.reasoning) yield { type: 'reasoning_delta', text: reply.reasoning };
  for (const delta of reply.deltas ?? splitWords(text)) yield { type: 'text_delta', text: delta };
  const toolCalls: ToolCallPart[] = (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_${randomUUID().slice(0, 12)}`,
    name: call.name,
    argumentsText: call.argumentsText ?? JSON.stringify(call.args ?? {}),
  }));
  const response = { text: reply.deltas ? reply.deltas.join('') : text, reasoning: reply.reasoning ?? '', toolCalls };
  yield reply.usage ? { type: 'response_completed', response, usage: { ...NO_USAGE, ...reply.usage } } : { type: 'response_completed', response };
}

const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

function splitWords(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function untilAborted<T>(value: T | Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new ModelCallError('provider', 'model call aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ModelCallError('provider', 'model call aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(value).then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
