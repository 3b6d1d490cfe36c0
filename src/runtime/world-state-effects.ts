import type { SampleInput } from '../../machines/turn.effects.js';
import {
  capturePolicyOnly,
  captureWorldState,
  nextBaseline,
  renderWorldStateDiff,
  scanRetainedSections,
  type WorldStateBaseline,
  type WorldStateCapture,
  type WorldStateSources,
} from '../context/world-state/index.js';
import { TurnFailure } from '../protocol/tool-result.js';
import { EffectAborted, untilAborted } from './effect-aborted.js';
import type { EffectCancellation } from './effect-port.js';
import { persistAndAppend, type RuntimeDeps } from './session-env.js';
import { WorldStateError } from '../protocol/errors.js';
import { hasOwnDirectory } from '../protocol/principal.js';

/**
 * CW-2's sampling before every model call: capture the four sources, diff against the baseline and
 * what the conversation still holds, write and append one message per changed section (ids are
 * idempotent), and only then move the baseline.
 */
export function worldStateSampler(deps: RuntimeDeps) {
  return async function sampleWorldState(input: SampleInput, cancellation: EffectCancellation): Promise<void> {
    const env = deps.env(input.sessionId);
    const { config, conversation } = env;
    const sandbox = config.sandbox();
    const ownDirectory = hasOwnDirectory(config.principal, config.quotaExempt);
    // Without a workspace or skills there is nothing to read: no promise to wait for on every model call.
    const capture =
      config.workspaceDir === null && deps.skills === null
        ? capturePolicyOnly(config.permissionMode, sandbox)
        : await untilAborted(readWorldState({ workspaceDir: config.workspaceDir, ownDirectory, skills: deps.skills, permissionMode: config.permissionMode, sandbox }, (message) => deps.warn(message, { sessionId: input.sessionId, turnId: input.turnId })), cancellation);
    // Nothing changed since the last sampling and the conversation was only appended to since: nothing to send.
    if (conversation.baselineChat === conversation.chat && sameBodies(capture, conversation.baseline)) return;
    const changed = renderWorldStateDiff(capture, conversation.baseline, scanRetainedSections(conversation.chat.conversation()));
    for (const { section, text } of changed) {
      // Between writes, never inside one: what is written is appended, so the conversation stays whole.
      if (cancellation.aborted) throw new EffectAborted('world-state sampling');
      const id = `world-state:${input.turnId}:${input.modelCallIndex}:${input.sample}:${section}`;
      await persistAndAppend(env, deps, input.turnId, { role: 'user', kind: 'world_state', section, text }, id).catch((error: unknown) => {
        throw error instanceof TurnFailure ? error : new TurnFailure('persistence_error', `a world-state message could not be written: ${String(error)}`);
      });
    }
    conversation.baseline = nextBaseline(capture);
    conversation.baselineChat = conversation.chat;
  };
}

/** Reads the four sources; a source that cannot be read fails the turn with its section's code. */
async function readWorldState(sources: WorldStateSources, warn: (message: string) => void): Promise<WorldStateCapture> {
  const { capture, warnings } = await captureWorldState(sources).catch((error: unknown) => {
    throw error instanceof WorldStateError ? new TurnFailure(error.code, error.message) : error;
  });
  for (const warning of warnings) warn(warning);
  return capture;
}

/** Whether every present section has the body the baseline has, and no other section is present. */
function sameBodies(capture: WorldStateCapture, baseline: WorldStateBaseline): boolean {
  let present = 0;
  for (const [section, body] of capture) {
    if (body === null) continue;
    present += 1;
    if (baseline.get(section) !== body) return false;
  }
  return present === baseline.size;
}
