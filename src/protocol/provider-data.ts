/**
 * Provider-opaque data (RT-18): what a provider attaches to its output and expects back unchanged
 * on the next request — reasoning signatures, encrypted or redacted reasoning, item ids. The
 * runtime never reads it; it stores it with the assistant message and sends it back as received.
 */

/** Plain JSON: what survives storage byte for byte. */
export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };

/** Keyed by provider, as the AI SDK's `providerMetadata` (sent back as `providerOptions`). */
export type ProviderMetadata = Record<string, Record<string, JsonValue>>;

/**
 * One piece of an assistant response, in the order the provider produced it. A tool call is a
 * position in the message's `toolCalls` (its id may be reassigned by the runtime, its place not).
 */
export type ContentBlock =
  | { type: 'text' | 'reasoning'; text: string; providerMetadata?: ProviderMetadata }
  | { type: 'tool_call'; index: number };

/**
 * Kept only when some text or reasoning block carries provider metadata: then the blocks, in order,
 * are what is sent back (the message's flat `text` and `reasoning` are their concatenations).
 */
export interface AssistantProviderData {
  blocks: ContentBlock[];
}

/** A JSON copy: drops `undefined` members, so what is sent first is what storage gives back later. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
