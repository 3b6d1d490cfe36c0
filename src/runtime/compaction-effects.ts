import { CompactionError } from '../compaction/compaction-error.js';
import { summaryRequest } from '../compaction/summary-request.js';
import { lastRealUserRequest } from '../context/conversation.js';
import { consumeModelStream } from '../model/consume-stream.js';
import type { SessionEnv, RuntimeDeps } from './session-env.js';
import { loadConversation } from './load-conversation.js';
import { closeUnclosedTurn } from './unclosed-turn.js';
import type { EffectCancellation } from './effect-port.js';
import { recordCompaction, recordUsage } from './turn-meter.js';
import { chargePrincipal } from './principal-budget.js';
import { messageOf } from '../protocol/error-message.js';

const SILENT = { text: () => undefined, reasoning: () => undefined };

/**
 * Compaction, rewind and reload (CP-1…CP-4). Each ends by installing the conversation from storage
 * — the same load a restart does — so what a turn sees afterwards is exactly what survives a crash.
 */
export function compactionEffects(deps: RuntimeDeps) {
  const { storage, env: envOf, now } = deps;

  /** Summarize the current view, store the checkpoint, install it. Inside a turn (`turnId` given) the summary call's usage counts in that turn's. */
  const compact = async (input: { sessionId: string; turnId?: string }, cancellation: EffectCancellation): Promise<{ compactionId: string }> => {
    const env = envOf(input.sessionId);
    const items = env.conversation.chat.view();
    const boundary = [...items].reverse().find((item) => item.provenance.kind === 'real');
    if (!boundary || boundary.provenance.kind !== 'real') throw new CompactionError('there is nothing new to compact', false, 'NothingToCompact');
    const summary = await summarize(env, cancellation, input.turnId);
    let position: number;
    const id = deps.newId('cmp');
    try {
      position = (await storage.listCompactions(env.config.id)).reduce((max, row) => Math.max(max, row.position), 0) + 1;
      await storage.saveCompaction({
        id,
        sessionId: env.config.id,
        position,
        boundaryMessageId: boundary.provenance.messageId,
        boundarySequence: boundary.provenance.sequence,
        summary,
        replayText: lastRealUserRequest(items),
        createdAtMs: now(),
        rewoundAtMs: null,
      }, env.config.fence);
    } catch (error) {
      throw new CompactionError(`the checkpoint could not be stored: ${messageOf(error)}`);
    }
    await install(env);
    if (input.turnId) recordCompaction(env, input.turnId);
    return { compactionId: id };
  };

  const rewindConversation = async (input: { sessionId: string; compactionId: string }): Promise<void> => {
    const env = envOf(input.sessionId);
    const known = (await storage.listCompactions(env.config.id)).some((row) => row.id === input.compactionId);
    if (!known) throw new CompactionError(`no checkpoint '${input.compactionId}' in this session`, false, 'UnknownCompaction');
    await storage.rewindTo(env.config.id, input.compactionId, now(), env.config.fence);
    await install(env);
  };

  /** CP-4's way out, and the way out of a turn whose closing write failed: both read and write storage again. */
  const reloadConversation = async (input: { sessionId: string }): Promise<void> => {
    const env = envOf(input.sessionId);
    await closeUnclosedTurn(env, deps);
    await install(env);
  };

  async function summarize(env: SessionEnv, cancellation: EffectCancellation, turnId: string | undefined): Promise<string> {
    const request = summaryRequest(env.config.agent.systemPrompt, env.conversation.chat.view(), env.config.model.capabilities);
    try {
      const { response, usage } = await consumeModelStream(env.config.model, request, cancellation, SILENT);
      if (usage && turnId) recordUsage(env, turnId, usage);
      // Issue 25: a summary's tokens are the principal's too, inside a turn or not.
      if (usage) await chargePrincipal(deps, env, usage);
      const text = response.text.trim();
      if (text === '') throw new Error('the model returned an empty summary');
      return text;
    } catch (error) {
      throw new CompactionError(`the summary could not be produced: ${messageOf(error)}`);
    }
  }

  async function install(env: SessionEnv): Promise<void> {
    try {
      const { chat } = await loadConversation(storage, env.config.id);
      chat.watermark = env.conversation.chat.watermark;
      env.conversation.chat = chat;
      env.conversation.prepared = null;
    } catch (error) {
      throw new CompactionError(`the checkpoint is stored but the conversation could not be reloaded: ${messageOf(error)}`, true);
    }
  }

  return { handlers: { compact, rewindConversation, reloadConversation } };
}
