import type { Observable } from 'rxjs';
import type { Actor } from 'xstate';
import type { CommandReply, SessionEvent } from '../../machines/session.machine.js';
import type { PermissionMode } from '../../storage/session-storage.js';
import {
  afterSequenceSchema,
  agentMessageSchema,
  estimateTokens,
  invalidInput,
  permissionModeSchema,
  resolvePermissionSchema,
  startTurnSchema,
  turnIdSchema,
  type InvalidInput,
} from '../protocol/commands.js';
import type { ChatMessage } from '../protocol/messages.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { RuntimeView } from './live-view.js';
import type { ProvidedSessionMachine } from './provided-machines.js';
import type { RuntimeServices, SessionEnv } from './session-env.js';
import type { ReplayResult } from './update-stream.js';
import { AGENT_MESSAGE_TOKEN_LIMIT } from '../context/item-limits.js';
import { resolveSkill, skillInstructionText } from '../skills/skill-directory.js';
import type { SkillsConfig } from '../skills/types.js';

export { AGENT_MESSAGE_TOKEN_LIMIT };

type Stopped = { code: 'RuntimeStopped' };

export type StartTurnResult =
  | { ok: true; turnId: string }
  | {
      ok: false;
      error:
        | { code: 'Busy'; turnId: string }
        | { code: 'EmptyInput' }
        | { code: 'ReloadRequired' }
        | { code: 'SessionActive' }
        | { code: 'UnknownSkill'; name: string }
        | { code: 'SkillTooLarge'; name: string; tokens: number }
        | InvalidInput
        | Stopped;
    };

export type CancelTurnResult = { ok: true } | { ok: false; error: { code: 'TurnNotActive' } | InvalidInput | Stopped };
export type ResolvePermissionResult =
  | { ok: true }
  | { ok: false; error: { code: 'TurnNotActive' } | { code: 'PermissionNotPending' } | InvalidInput | Stopped };
export type DeliverResult = { ok: true } | { ok: false; error: { code: 'MessageTooLarge'; tokens: number } | InvalidInput | Stopped };
export type SetModeResult = { ok: true } | { ok: false; error: { code: 'PersistenceError'; message: string } | InvalidInput | Stopped };
export type WaitResult = TurnOutcome | { status: 'unknown_turn' };
export type CompactResult =
  | { ok: true; compactionId: string }
  | { ok: false; error: { code: 'SessionActive' } | { code: 'ReloadRequired' } | { code: string; message: string } | Stopped };
export type RewindResult =
  | { ok: true }
  | { ok: false; error: { code: 'SessionActive' } | { code: 'UnknownCompaction'; message: string } | { code: string; message: string } | InvalidInput | Stopped };

export interface SessionSnapshot {
  version: 7;
  sessionId: string;
  lastUpdateSequence: number;
  permissionMode: PermissionMode;
  /** turnchart runs tools in the host process; any sandbox is the tool's own business. */
  sandbox: 'none';
  runtime: RuntimeView;
}

/** The host's handle on one session: every command is validated and answers with a value. */
export class SessionHandle {
  readonly updates$: Observable<UpdateEnvelope>;
  private commandCount = 0;
  private stopped = false;
  private stopping: Promise<void> | null = null;

  constructor(
    readonly id: string,
    /** The live session actor (for inspection and embedding); drive it through the methods. */
    readonly actor: Actor<ProvidedSessionMachine>,
    private readonly env: SessionEnv,
    private readonly services: RuntimeServices,
    private readonly skills: SkillsConfig | null = null,
  ) {
    this.updates$ = env.updates.updates$;
  }

  get agent(): string {
    return this.env.agentName;
  }

  async startTurn(command: unknown): Promise<StartTurnResult> {
    if (this.stopped) return stoppedError();
    const parsed = startTurnSchema.safeParse(command);
    if (!parsed.success) return invalidInput(parsed.error);
    const { clientRequestId, input } = parsed.data;
    const known = this.actor.getSnapshot().context;
    if (known.reloadRequired || Object.hasOwn(known.accepted, clientRequestId)) {
      // The chart answers a retried request (or a session that needs a reload) without this input: no files are read.
      const reply = await this.command({ type: 'session.start_turn', commandId: '', turnId: this.services.newId('turn'), clientRequestId });
      return reply.ok ? { ok: true, turnId: reply.turnId ?? '' } : (reply as StartTurnResult);
    }
    const texts = input.flatMap((part) => (part.type === 'text' && part.text.trim() !== '' ? [part.text] : []));
    if (texts.length === 0) return { ok: false, error: { code: 'EmptyInput' } };
    // RT-1: skill bodies are read now, before acceptance; the turn keeps these snapshots whatever the files do later.
    const skills: ChatMessage[] = [];
    for (const name of new Set(input.flatMap((part) => (part.type === 'skill' ? [part.name] : [])))) {
      const resolved = await resolveSkill(this.skills, name);
      if (!resolved.ok) return { ok: false, error: resolved.error };
      skills.push({ role: 'user', kind: 'skill_instruction', text: skillInstructionText(resolved.skill), skill: { name, path: resolved.skill.path } });
    }
    const messages: ChatMessage[] = [...skills, { role: 'user', kind: 'normal', text: texts.join('\n\n') }];
    const turnId = this.services.newId('turn');
    this.env.preparedInputs.set(turnId, { clientRequestId, messages });
    const reply = await this.command({ type: 'session.start_turn', commandId: '', turnId, clientRequestId });
    if (!reply.ok || reply.turnId !== turnId) this.env.preparedInputs.delete(turnId);
    if (reply.ok) return { ok: true, turnId: reply.turnId ?? turnId };
    return reply as StartTurnResult;
  }

  /** Resolves with the turn's outcome; at once for a turn that already ended. */
  async waitForTurn(turnId: string): Promise<WaitResult> {
    if (!turnIdSchema.safeParse(turnId).success) return { status: 'unknown_turn' };
    const known = this.env.outcomes.get(turnId);
    if (known) return known;
    if (this.isLive(turnId)) {
      return new Promise<TurnOutcome>((resolve) => {
        const list = this.env.waiters.get(turnId) ?? [];
        list.push(resolve);
        this.env.waiters.set(turnId, list);
      });
    }
    return this.storedOutcome(turnId);
  }

  async cancelTurn(turnId: unknown): Promise<CancelTurnResult> {
    if (this.stopped) return stoppedError();
    const parsed = turnIdSchema.safeParse(turnId);
    if (!parsed.success) return invalidInput(parsed.error);
    return (await this.command({ type: 'session.cancel_turn', commandId: '', turnId: parsed.data })) as CancelTurnResult;
  }

  async resolvePermission(command: unknown): Promise<ResolvePermissionResult> {
    if (this.stopped) return stoppedError();
    const parsed = resolvePermissionSchema.safeParse(command);
    if (!parsed.success) return invalidInput(parsed.error);
    return (await this.command({ type: 'session.resolve_permission', commandId: '', ...parsed.data })) as ResolvePermissionResult;
  }

  /** RT-6: summarizes the conversation into a checkpoint; `SessionActive` while a turn runs. */
  async compactConversation(): Promise<CompactResult> {
    if (this.stopped) return stoppedError();
    const reply = await this.command({ type: 'session.compact', commandId: '' });
    return reply.ok ? { ok: true, compactionId: reply.compactionId ?? '' } : (reply as CompactResult);
  }

  /** RT-6, CP-3: makes an earlier checkpoint the active one; `SessionActive` while a turn runs. */
  async rewindConversation(compactionId: unknown): Promise<RewindResult> {
    if (this.stopped) return stoppedError();
    const parsed = turnIdSchema.safeParse(compactionId);
    if (!parsed.success) return invalidInput(parsed.error);
    const reply = await this.command({ type: 'session.rewind', commandId: '', compactionId: parsed.data });
    return reply.ok ? { ok: true } : (reply as RewindResult);
  }

  /** CP-4: reloads the conversation from storage; clears `ReloadRequired` when it succeeds. */
  async reload(): Promise<RewindResult> {
    if (this.stopped) return stoppedError();
    const reply = await this.command({ type: 'session.reload', commandId: '' });
    return reply.ok ? { ok: true } : (reply as RewindResult);
  }

  /** RT-4: only enqueues; the next model call of a user turn drains the mailbox. */
  async deliverAgentMessage(message: unknown): Promise<DeliverResult> {
    if (this.stopped) return stoppedError();
    const parsed = agentMessageSchema.safeParse(message);
    if (!parsed.success) return invalidInput(parsed.error);
    const tokens = estimateTokens(parsed.data.text);
    if (tokens >= AGENT_MESSAGE_TOKEN_LIMIT) return { ok: false, error: { code: 'MessageTooLarge', tokens } };
    this.env.mailbox.push(parsed.data);
    return { ok: true };
  }

  /** RT-5: stored, then in force from the next tool call's authorization. */
  async setPermissionMode(mode: unknown): Promise<SetModeResult> {
    if (this.stopped) return stoppedError();
    const parsed = permissionModeSchema.safeParse(mode);
    if (!parsed.success) return invalidInput(parsed.error);
    try {
      await this.services.storage.setPermissionMode(this.id, parsed.data);
    } catch (error) {
      return { ok: false, error: { code: 'PersistenceError', message: error instanceof Error ? error.message : String(error) } };
    }
    this.env.permissionMode = parsed.data;
    return { ok: true };
  }

  snapshot(): SessionSnapshot {
    return {
      version: 7,
      sessionId: this.id,
      lastUpdateSequence: this.env.updates.lastSequence,
      permissionMode: this.env.permissionMode,
      sandbox: 'none',
      runtime: structuredClone(this.env.live.runtime),
    };
  }

  replayUpdates(afterSequence: unknown): ReplayResult | { ok: false; error: InvalidInput } {
    const parsed = afterSequenceSchema.safeParse(afterSequence);
    if (!parsed.success) return invalidInput(parsed.error);
    return this.env.updates.replay(parsed.data);
  }

  /** RT-7: the turn a client request id was accepted as, if any. */
  async acceptedTurn(clientRequestId: string): Promise<{ ok: true; turnId: string } | { ok: false; error: { code: 'NotAccepted' } }> {
    const turnId = this.actor.getSnapshot().context.accepted[clientRequestId];
    return turnId ? { ok: true, turnId } : { ok: false, error: { code: 'NotAccepted' } };
  }

  /** Stops the running turn (it fails `actor_stopped`) and waits until the session is idle; a second call waits for the first. */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    const commandId = `c${++this.commandCount}`;
    // Idle only counts once the chart has taken the stop: called from an update subscriber, the
    // stop waits behind the step in progress, and the session may not even have started its turn.
    await new Promise<void>((resolve) => {
      let taken = false;
      const settle = (snapshot: ReturnType<typeof this.actor.getSnapshot>): void => {
        taken ||= snapshot.context.reply?.commandId === commandId;
        if (!taken || !snapshot.matches('idle')) return;
        sub.unsubscribe();
        resolve();
      };
      const sub = this.actor.subscribe({ next: settle, error: () => resolve() });
      this.actor.send({ type: 'session.stop', commandId });
      settle(this.actor.getSnapshot());
    });
    this.actor.stop();
    this.env.updates.complete();
  }

  /**
   * Sends a command event; the chart's guards decide and leave the answer in `context.reply`.
   * The subscription comes first: a command issued while the chart handles this one (say, from an
   * update subscriber) is processed in the same flush and replaces `context.reply`, so the answer
   * must be read from the snapshot of the step that produced it.
   */
  private command(event: Extract<SessionEvent, { commandId: string }>): Promise<CommandReply> {
    const commandId = `c${++this.commandCount}`;
    const answered = () => {
      const reply = this.actor.getSnapshot().context.reply;
      return reply?.commandId === commandId ? reply.result : undefined;
    };
    return new Promise<CommandReply>((resolve) => {
      const settle = (): void => {
        const result = answered();
        if (!result) return;
        sub.unsubscribe();
        resolve(result);
      };
      const sub = this.actor.subscribe(settle);
      this.actor.send({ ...event, commandId });
      settle();
    });
  }

  private isLive(turnId: string): boolean {
    return this.actor.getSnapshot().context.activeTurn?.turnId === turnId;
  }

  private async storedOutcome(turnId: string): Promise<WaitResult> {
    const row = await this.services.storage.getTurn(turnId);
    if (!row || row.sessionId !== this.id) return { status: 'unknown_turn' };
    switch (row.status) {
      case 'completed':
        return { status: 'completed', finalText: row.finalText ?? '' };
      case 'cancelled':
        return { status: 'cancelled' };
      case 'failed':
        return { status: 'failed', code: (row.errorCode ?? 'model_error') as never, message: row.errorMessage ?? '' };
      case 'interrupted':
      case 'running':
        return { status: 'failed', code: 'actor_stopped', message: 'the turn was interrupted by a process restart' };
    }
  }
}

function stoppedError(): { ok: false; error: Stopped } {
  return { ok: false, error: { code: 'RuntimeStopped' } };
}
