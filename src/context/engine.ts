import { estimateTokens } from '../protocol/commands.js';
import type { ModelCapabilities, ModelRequest, SystemPart, ToolDefinition } from '../protocol/model.js';
import { TurnFailure } from '../protocol/tool-result.js';
import { budgetFrom, conversationTokens, type ContextBudgetEstimate } from './budget.js';
import type { ConversationItem } from './conversation.js';
import { normalizeConversation, SYNTHETIC, type SourcedMessage } from './normalize.js';
import { projectToolResult } from './projection.js';
import { pruneMessage } from './prune.js';
import { SYSTEM_PART_TOKEN_LIMIT } from './item-limits.js';

export { SYSTEM_PART_TOKEN_LIMIT };

/** The three regions and what shapes their copy (CW-1). */
export interface PrepareSources {
  system: readonly SystemPart[];
  conversation: readonly ConversationItem[];
  tools: readonly ToolDefinition[];
  capabilities: ModelCapabilities;
  /** Stored messages below this sequence have long tool results pruned (CW-4). */
  watermark: number;
}

export interface PreparedModelCall {
  request: ModelRequest;
  budget: ContextBudgetEstimate;
  /** For each request message: the stored message id it renders, or `synthetic`. */
  provenance: string[];
}

/** A request that cannot be assembled fails the model call as `model_protocol_error` (RT-9). */
export class ContextAssemblyError extends TurnFailure {
  constructor(
    readonly reason: 'InvalidSystemContext' | 'SystemMessageInConversation',
    message: string,
  ) {
    super('model_protocol_error', `${reason}: ${message}`);
    this.name = 'ContextAssemblyError';
  }
}

/**
 * `ContextEngine.prepare` (CW-1, CW-6): the only place the three regions meet. It prunes, projects
 * and normalizes a copy of the conversation, validates, measures, and builds a provider-agnostic
 * request — system parts first, then the conversation, tools in `tools`, `maxOutputTokens` from the
 * model, no sampling parameters. Deterministic and side-effect free: same sources, same bytes.
 */
export function prepare(sources: PrepareSources): PreparedModelCall {
  if (!validated.has(sources.system)) {
    validateSystem(sources.system);
    validated.add(sources.system);
  }
  const copy: SourcedMessage[] = sources.conversation.map((item) => {
    const { message, provenance } = item;
    if ((message.role as string) === 'system') throw new ContextAssemblyError('SystemMessageInConversation', 'a system message is in the conversation');
    const real = provenance.kind === 'real';
    const pruned = real && provenance.sequence < sources.watermark ? pruneMessage(message) : message;
    const copied = pruned.role === 'tool' ? projectToolResult(pruned) : pruned;
    return copied === message ? unchanged(item) : { message: copied, source: real ? provenance.messageId : SYNTHETIC };
  });
  const { messages, provenance } = normalizeConversation(copy, { dataBlocks: sources.capabilities.dataBlocks === true });
  const request: ModelRequest = {
    system: sources.system.map((part) => ({ key: part.key, content: part.content })),
    messages,
    tools: [...sources.tools],
    maxOutputTokens: sources.capabilities.maxOutputTokens,
  };
  return { request, budget: budgetOf(request, sources), provenance };
}

/** An item whose copy is the item itself: its sourced form is built once and reused by every call. */
const sourcedItems = new WeakMap<ConversationItem, SourcedMessage>();

function unchanged(item: ConversationItem): SourcedMessage {
  let sourced = sourcedItems.get(item);
  if (!sourced) {
    const { message, provenance } = item;
    sourced = { message, source: provenance.kind === 'real' ? provenance.messageId : SYNTHETIC };
    sourcedItems.set(item, sourced);
  }
  return sourced;
}

/** Token counts of the system and tool regions, which a turn reuses unchanged for every call. */
const regionTokens = new WeakMap<object, number>();

function tokensOf(region: readonly object[], asSubmitted: readonly object[]): number {
  let tokens = regionTokens.get(region);
  if (tokens === undefined) {
    tokens = estimateTokens(asSubmitted);
    regionTokens.set(region, tokens);
  }
  return tokens;
}

/** `measureBudget` of the submitted request, with the unchanging regions measured once per source. */
function budgetOf(request: ModelRequest, sources: PrepareSources): ContextBudgetEstimate {
  return budgetFrom(tokensOf(sources.system, request.system), conversationTokens(request.messages), tokensOf(sources.tools, request.tools), request.maxOutputTokens);
}

/** System contexts already validated: a turn reuses one array for every call, so it is checked once. */
const validated = new WeakSet<readonly SystemPart[]>();

function validateSystem(parts: readonly SystemPart[]): void {
  const keys = new Set<string>();
  for (const part of parts) {
    if (part.key.trim() === '') throw new ContextAssemblyError('InvalidSystemContext', 'a system part has an empty key');
    if (keys.has(part.key)) throw new ContextAssemblyError('InvalidSystemContext', `the system part key '${part.key}' is used twice`);
    keys.add(part.key);
    if (part.content.trim() === '') throw new ContextAssemblyError('InvalidSystemContext', `the system part '${part.key}' is empty`);
    const tokens = estimateTokens(part.content);
    if (tokens >= SYSTEM_PART_TOKEN_LIMIT) {
      throw new ContextAssemblyError('InvalidSystemContext', `the system part '${part.key}' estimates ${tokens} tokens (limit ${SYSTEM_PART_TOKEN_LIMIT})`);
    }
  }
}

/** The seed's name for the assembly step (001 §6); `prepare` is the same function. */
export const ContextEngine = { prepare } as const;
