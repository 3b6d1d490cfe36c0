import type { ModelCapabilities, ModelRequest, SystemPart, ToolDefinition } from '../protocol/model.js';
import { ContextAssemblyError } from './assembly-error.js';
import { budgetFrom, conversationTokensOf, type ContextBudgetEstimate } from './budget.js';
import type { ConversationItem } from './conversation.js';
import { SYSTEM_PART_TOKEN_LIMIT } from '../protocol/item-limits.js';
import { requestCopy } from './request-copy.js';
import { estimateTokens } from '../protocol/token-estimate.js';

export { ContextAssemblyError };

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
  const copy = requestCopy(sources.conversation, { watermark: sources.watermark, dataBlocks: sources.capabilities.dataBlocks === true }).settle();
  const request: ModelRequest = {
    system: sources.system.map((part) => ({ key: part.key, content: part.content })),
    messages: copy.messages.slice(),
    tools: [...sources.tools],
    maxOutputTokens: sources.capabilities.maxOutputTokens,
  };
  return { request, budget: budgetOf(request, sources, conversationTokensOf(copy.messages.length, copy.bytes)), provenance: copy.provenance.slice() };
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

/**
 * `measureBudget` of the submitted request: the unchanging regions measured once per source, the
 * conversation from the kept copy's running byte total (never a recount of the whole history).
 */
function budgetOf(request: ModelRequest, sources: PrepareSources, conversationTokens: number): ContextBudgetEstimate {
  return budgetFrom(tokensOf(sources.system, request.system), conversationTokens, tokensOf(sources.tools, request.tools), request.maxOutputTokens);
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
