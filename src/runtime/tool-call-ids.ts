import type { ToolCallPart } from '../protocol/messages.js';
import type { ModelResponse } from '../protocol/model.js';
import { isValidId } from '../protocol/commands.js';

/**
 * RT-15: each tool call gets the runtime's own id. Providers reuse ids (`call_0` in every response)
 * or send ones a host cannot route (empty, too long), so the provider's id is adopted only when it
 * is a valid id not used yet in the session nor earlier in this response — which keeps stored ids
 * readable — and otherwise a fresh one is minted, with the provider's id kept beside it for the
 * provider request.
 */
export function assignToolCallIds(response: ModelResponse, usedInSession: (id: string) => boolean, mint: () => string): ModelResponse {
  if (response.toolCalls.length === 0) return response;
  const taken = new Set<string>();
  let changed = false;
  const toolCalls = response.toolCalls.map((call): ToolCallPart => {
    const adoptable = isValidId(call.id) && !usedInSession(call.id) && !taken.has(call.id);
    const id = adoptable ? call.id : freshId(mint, usedInSession, taken);
    taken.add(id);
    if (adoptable) return call;
    changed = true;
    return { ...call, id, providerId: call.id };
  });
  return changed ? { ...response, toolCalls } : response;
}

/** A minted id is a uuid: a clash is not expected, but costs nothing to rule out. */
function freshId(mint: () => string, usedInSession: (id: string) => boolean, taken: Set<string>): string {
  for (;;) {
    const id = mint();
    if (!usedInSession(id) && !taken.has(id)) return id;
  }
}
