import type { ToolCallContext } from '../../machines/tool-call.machine.js';
import type { ToolEffectInput, WaitAgentOutput } from '../../machines/tool-call.effects.js';
import type { TurnEffectInput } from '../../machines/turn.effects.js';
import type { StoredMessage } from '../protocol/messages.js';
import type { ToolResult } from '../protocol/tool-result.js';
import type { EffectCancellation } from './effect-port.js';
import type { Delegation } from './delegation.js';
import type { RuntimeDeps, SessionEnv } from './session-env.js';
import { messageOf } from '../protocol/error-message.js';
import { emit } from './session-env.js';
import { systemContext } from '../context/system-context.js';

type Ctx = { context: ToolCallContext };

/** What the runtime lends these effects: the registry of children, and how a session takes another agent. */
export interface SubagentDeps extends RuntimeDeps {
  delegation: Delegation;
  /** agent.switch: the session's agent, hooks and tool surface become those of `agent`. */
  installAgent: (env: SessionEnv, agent: string) => void;
  /** Issue 30: whether the runtime knows an agent of this name. */
  agentExists: (agent: string) => boolean;
  /** Issue 30: a switch inside a run is stored and installed: the session chart takes the agent's limits for its next turns. */
  agentSwitchedInRun: (env: SessionEnv, agent: string) => void;
}

/**
 * The charts' side of sub-agents and agent.switch: the tool-call chart's delegation guards and
 * effects, the turn's `cancelChildren`, and the session's `switchAgent` maintenance effect.
 */
export function delegationEffects(deps: SubagentDeps) {
  const { env: envOf, delegation } = deps;

  const delegate = (input: ToolEffectInput): Promise<ToolResult> =>
    input.name === 'spawn_agent' ? delegation.spawn(input) : delegation.send(input);

  const waitAgent = (input: ToolEffectInput, cancellation: EffectCancellation): Promise<WaitAgentOutput> => delegation.wait(input, cancellation);

  /** Stores the new agent and a note in the conversation, in one transaction; the next turn runs the new agent. */
  const switchAgent = async (input: { sessionId: string; agent: string }): Promise<void> => {
    const env = envOf(input.sessionId);
    const previous = env.config.agentName;
    const lastTurn = (await deps.storage.listTurns(env.config.id)).filter((t) => t.status !== 'queued').at(-1);
    const note = lastTurn ? noteMessage(env, deps, lastTurn.id, previous, input.agent) : null;
    if (note) env.conversation.chat.check(note.message);
    try {
      await deps.storage.switchAgent(env.config.id, input.agent, note, env.config.fence);
    } catch (error) {
      // The session chart answers the command with this code; nothing changed.
      throw Object.assign(new Error(`the agent switch could not be stored: ${messageOf(error)}`), { commandCode: 'PersistenceError' });
    }
    if (note) env.conversation.chat.append(note, true);
    deps.installAgent(env, input.agent);
  };

  /**
   * Issue 30: `switch_agent`, once the chart's allow-list and policy checks passed. The session's
   * agent is stored (the row, so a reopened session runs it) and installed now: the turn's next
   * model call is built from the new agent's prompt, tools and model. The reminder that names the
   * switch waits in the mailbox, so it joins the conversation after this response's tool results
   * (a message between a call and its result would break the request) and before that model call.
   */
  const switchInRun = async (input: ToolEffectInput): Promise<ToolResult> => {
    const env = envOf(input.sessionId);
    const from = env.config.agentName;
    const to = String(input.args.agent);
    const reason = typeof input.args.reason === 'string' ? input.args.reason : null;
    if (to === from) return { status: 'succeeded', content: JSON.stringify({ agent: to, switched: false }) };
    await deps.storage.switchAgent(env.config.id, to, null, env.config.fence);
    deps.installAgent(env, to);
    // The running turn resolved its system context as it opened: the rest of it speaks as the new agent.
    env.conversation.turnSystem = systemContext(env.config.agent.systemPrompt, env.config.tools());
    env.conversation.mailbox.push({ from: 'runtime', text: switchReminder(from, to, reason), note: true });
    deps.agentSwitchedInRun(env, to);
    emit(env, input.turnId, { type: 'agent_switched', from, to, toolCallId: input.toolCallId, ...(reason !== null && { reason }) });
    return { status: 'succeeded', content: JSON.stringify({ agent: to, previous: from, switched: true }) };
  };

  return {
    handlers: { delegate, waitAgent, switchAgent },
    switchInRun,
    guards: {
      // The seed's rule: a sub-agent may not delegate further, unless its agent says `nested: true`.
      delegationForbidden: ({ context }: Ctx) => {
        const { agent, parent } = envOf(context.sessionId).config;
        return agent.delegation === null || (parent !== null && !agent.delegation.nested);
      },
      agentSwitchForbidden: ({ context }: Ctx) => {
        const target = String(context.args.agent);
        return !envOf(context.sessionId).config.agent.switchTo.includes(target) || !deps.agentExists(target);
      },
      childAgentForbidden: ({ context }: Ctx) => {
        const allowed = envOf(context.sessionId).config.agent.delegation?.agents ?? [];
        return !allowed.includes(String(context.args.agent));
      },
      childLimitReached: ({ context }: Ctx) => {
        const max = envOf(context.sessionId).config.agent.delegation?.maxChildren ?? 0;
        return delegation.liveChildren(context.sessionId, context.turnId) >= max;
      },
      approvalNonInteractive: ({ context }: Ctx) => envOf(context.sessionId).config.nonInteractive,
    },
    actions: {
      cancelChildren: ({ context }: { context: TurnEffectInput }) => delegation.cancelChildren(context.sessionId, context.turnId),
    },
  };
}

/**
 * The note that records a switch. Stored messages belong to a turn, so it joins the conversation
 * under the last turn's id, after everything that turn wrote; a session with no turn yet has no
 * conversation to note it in, and simply starts with the new agent.
 */
function noteMessage(env: SessionEnv, deps: RuntimeDeps, turnId: string, from: string, to: string): StoredMessage {
  return {
    id: deps.newId('msg'),
    sessionId: env.config.id,
    turnId,
    sequence: env.conversation.chat.nextSequence,
    createdAtMs: deps.now(),
    message: { role: 'user', kind: 'agent_note', text: `The session's agent changed from '${from}' to '${to}': from here on you act as '${to}'.` },
  };
}

/** The `system_reminder` the model reads before its first call as the new agent: it names the switch. */
function switchReminder(from: string, to: string, reason: string | null): string {
  const why = reason === null ? '' : ` Reason given: ${reason}`;
  return `<system_reminder>\nagent.switch: this run switched from agent '${from}' to agent '${to}'. From here on you act as '${to}', with its instructions and tools.${why}\n</system_reminder>`;
}
