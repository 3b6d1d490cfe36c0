import type { Observable } from 'rxjs';
import type { Actor } from 'xstate';
import { isReplyTo, type CommandEvent, type CommandReply, type CommandType } from '../../machines/session.machine.js';
import type { TurnRow } from '../../storage/session-storage.js';
import { afterSequenceSchema, invalidInput, turnIdSchema, type InvalidInput } from '../protocol/commands.js';
import { commandCatalog, type CommandResult, type SessionCommands } from '../protocol/command-catalog.js';
import type { ChatMessage } from '../protocol/messages.js';
import type { StoppedBy, TurnOutcome } from '../protocol/outcome.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type {
  CancelTurnResult,
  CompactResult,
  DeliverResult,
  ReplayResult,
  ResolvePermissionResult,
  RewindResult,
  SetModeResult,
  StartTurnResult,
  Stopped,
  SubmitTurnResult,
  SwitchAgentResult,
  TurnStatusResult,
  WaitResult,
} from '../protocol/command-results.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import { sandboxViewOf } from '../protocol/sandbox.js';
import { limitsOf, type AgentDefinition } from './agents.js';
import type { ProvidedSessionMachine } from './provided-machines.js';
import type { RuntimeServices, SessionEnv } from './session-env.js';
import { holdGate } from './turn-bookkeeping.js';
import { newTraceParent } from './trace-root.js';
import { AGENT_MESSAGE_TOKEN_LIMIT } from '../protocol/item-limits.js';
import { MAILBOX_MAX_MESSAGES, MAILBOX_MAX_TOKENS } from '../protocol/input-limits.js';
import { resolveSkill, skillInstructionText } from '../skills/skill-directory.js';
import type { SkillsConfig } from '../skills/types.js';
import { messageOf } from '../protocol/error-message.js';
import { estimateTokens } from '../protocol/token-estimate.js';

/** What the runtime does when a session closes: forget it and release its lease. */
export interface SessionLifecycle {
  /** Called once the session's actor has stopped; resolves when the session is released. */
  closed(handle: SessionHandle): Promise<void>;
  /** Whether the whole runtime is shutting down (a closed handle then answers `RuntimeStopped`). */
  stopping(): boolean;
  /** A command started or finished: the session may have become idle or stopped being so. */
  changed(handle: SessionHandle): void;
  /** The runtime's agent of that name (agent.switch checks it). */
  agent?(name: string): AgentDefinition | undefined;
}

/** The host's handle on one session: every command of the catalog is validated and answers with a value. */
export class SessionHandle implements SessionCommands {
  readonly updates$: Observable<UpdateEnvelope>;
  private commandCount = 0;
  /** Commands under way: a session in use is never closed for being idle. */
  private inUse = 0;
  private stopped = false;
  private closing: Promise<void> | null = null;

  constructor(
    readonly id: string,
    /** The live session actor (for inspection and embedding); drive it through the methods. */
    readonly actor: Actor<ProvidedSessionMachine>,
    private readonly env: SessionEnv,
    private readonly services: RuntimeServices,
    private readonly skills: SkillsConfig | null = null,
    private readonly lifecycle: SessionLifecycle | null = null,
  ) {
    this.updates$ = env.output.updates.updates$;
  }

  /** Issue 25: the principal that owns the session (null: stored before principals, an admin's to see). */
  get principal(): string | null {
    return this.env.config.principal;
  }

  get agent(): string {
    return this.env.config.agentName;
  }

  /** The fencing token this runtime holds for the session: writes that belong with it (a task's events) carry it too. */
  get fence(): number {
    return this.env.config.fence;
  }

  /** A command is under way. */
  get busy(): boolean {
    return this.inUse > 0;
  }

  /** Runs `work` with the session marked in use, so it cannot be closed as idle meanwhile. */
  private async using<T>(work: () => Promise<T>): Promise<T> {
    this.inUse += 1;
    try {
      return await work();
    } finally {
      this.inUse -= 1;
      this.lifecycle?.changed(this);
    }
  }

  /** False once the session has been closed: a closed handle answers `SessionClosed`; open the session again. */
  get isOpen(): boolean {
    return !this.stopped;
  }

  /**
   * RT-1: accepts the turn and answers before anything is written; the turn's first step writes the
   * user message. Under the `enqueue` and `interrupt` policies a busy session answers `queued: true`.
   */
  async startTurn(command: unknown): Promise<StartTurnResult> {
    const accepted = await this.using(() => this.accept(command));
    if (!accepted.ok) return accepted;
    return accepted.queued ? { ok: true, turnId: accepted.turnId, queued: true } : { ok: true, turnId: accepted.turnId };
  }

  /**
   * The service's way in (RL-1): like `startTurn`, but answers only once the turn's input is durable,
   * with its run id and whether it runs or waits. A write that fails answers `PersistenceError`, and
   * the request id may then be sent again.
   */
  async submitTurn(command: unknown): Promise<SubmitTurnResult> {
    return this.using(() => this.submit(command));
  }

  private async submit(command: unknown): Promise<SubmitTurnResult> {
    const accepted = await this.accept(command);
    if (!accepted.ok) return accepted;
    const { turnId } = accepted;
    if (accepted.stored) {
      try {
        await accepted.stored;
      } catch (error) {
        return { ok: false, error: { code: 'PersistenceError', message: messageOf(error) } };
      }
    }
    const status = await this.turnStatus(turnId);
    const runId = this.env.turns.runs.get(turnId) ?? (await this.services.storage.getTurn(turnId))?.runId ?? '';
    return { ok: true, turnId, runId, status: status.ok ? status.status : 'running' };
  }

  private async accept(command: unknown): Promise<{ ok: true; turnId: string; queued: boolean; isNew: boolean; stored?: Promise<void> } | StartTurnFailure> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.startTurn.input.safeParse(command);
    if (!parsed.success) return invalidInput(parsed.error);
    const { clientRequestId, input, trigger, traceParent } = parsed.data;
    const known = this.actor.getSnapshot().context;
    if (known.reloadRequired || Object.hasOwn(known.accepted, clientRequestId)) {
      // The chart answers a retried request (or a session that needs a reload) without this input: no files are read.
      const reply = await this.command({ type: 'session.start_turn', commandId: '', turnId: this.services.newId('turn'), clientRequestId });
      return reply.ok ? { ok: true, turnId: reply.turnId, queued: reply.queued === true, isNew: false } : reply;
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
    const runId = this.services.newId('run');
    // Issue 27: a turn without a caller's trace context gets a synthetic root now, stored with its row.
    this.env.turns.preparedInputs.set(turnId, { clientRequestId, messages, runId, trigger, fromQueue: false, traceParent: traceParent ?? newTraceParent() });
    // Taken before the chart decides: the write may succeed or fail (and the turn end) before this call resumes.
    const stored = this.env.turns.stored.wait(turnId);
    const reply = await this.command({ type: 'session.start_turn', commandId: '', turnId, clientRequestId });
    const isNew = reply.ok && reply.turnId === turnId;
    if (!isNew) {
      this.env.turns.preparedInputs.delete(turnId);
      this.env.turns.stored.forget(turnId);
    } else this.env.turns.runs.set(turnId, runId);
    if (!reply.ok) return reply;
    return { ok: true, turnId: reply.turnId, queued: reply.queued === true, isNew, stored };
  }

  /** Resolves with the turn's outcome; at once for a turn that already ended. */
  async waitForTurn(turnId: string): Promise<WaitResult> {
    if (!turnIdSchema.safeParse(turnId).success) return { status: 'unknown_turn' };
    const known = this.env.turns.outcomes.get(turnId);
    if (known) return known;
    if (this.isLive(turnId)) {
      return new Promise<WaitResult>((resolve) => {
        const list = this.env.turns.waiters.get(turnId) ?? [];
        list.push(resolve);
        this.env.turns.waiters.set(turnId, list);
      });
    }
    return this.storedOutcome(turnId);
  }

  /** Where a turn stands now — queued, running, or how it ended — without waiting. */
  async turnStatus(turnId: string): Promise<TurnStatusResult> {
    if (!turnIdSchema.safeParse(turnId).success) return { ok: false, error: { code: 'UnknownTurn' } };
    const context = this.actor.getSnapshot().context;
    if (context.activeTurn?.turnId === turnId) return { ok: true, turnId, status: 'running' };
    if (context.queue.some((q) => q.turnId === turnId)) return { ok: true, turnId, status: 'queued' };
    const known = this.env.turns.outcomes.get(turnId);
    if (known) return { ok: true, turnId, status: known.status, outcome: known };
    const row = await this.services.storage.getTurn(turnId);
    if (!row || row.sessionId !== this.id) return { ok: false, error: { code: 'UnknownTurn' } };
    const outcome = row.status === 'queued' || row.status === 'running' ? undefined : outcomeOf(row);
    return { ok: true, turnId, status: row.status, ...(outcome && { outcome }) };
  }

  /** Cancels the running turn (its model call or tool is aborted) or a queued one (it never starts). */
  async cancelTurn(turnId: unknown): Promise<CancelTurnResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.cancelTurn.input.safeParse(turnId);
    if (!parsed.success) return invalidInput(parsed.error);
    const reply = await this.command({ type: 'session.cancel_turn', commandId: '', turnId: parsed.data });
    const write = this.env.turns.cancelWrites.get(parsed.data);
    if (!reply.ok || !write) return reply;
    this.env.turns.cancelWrites.delete(parsed.data);
    try {
      await write;
      return reply;
    } catch (error) {
      // The turn will not run in this process, but its row still says queued: say so rather than claim a durable cancel.
      return { ok: false, error: { code: 'PersistenceError', message: messageOf(error) } };
    }
  }

  async resolvePermission(command: unknown): Promise<ResolvePermissionResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.resolvePermission.input.safeParse(command);
    if (!parsed.success) return invalidInput(parsed.error);
    const reply = await this.command({ type: 'session.resolve_permission', commandId: '', ...parsed.data });
    if (!reply.ok) return this.answeredAlready(parsed.data, reply);
    // Issue 26: the answer is stored before it is acknowledged: a host dying now loses no approval.
    const write = this.env.turns.answerWrites.get(parsed.data.toolCallId);
    if (!write) return reply;
    this.env.turns.answerWrites.delete(parsed.data.toolCallId);
    try {
      await write;
      return reply;
    } catch (error) {
      return { ok: false, error: { code: 'PersistenceError', message: messageOf(error) } };
    }
  }

  /**
   * The same answer given again is acknowledged, not refused: a client whose first attempt went
   * unanswered (its owner died after storing the answer, a dropped connection, a routed command timed
   * out) cannot know whether it was taken, and must be able to retry safely. Only the stored answer
   * decides: a different decision, or none stored, keeps the refusal.
   */
  private async answeredAlready(command: { turnId: string; toolCallId: string; decision: string }, refusal: ResolvePermissionResult): Promise<ResolvePermissionResult> {
    if (refusal.ok || (refusal.error.code !== 'PermissionNotPending' && refusal.error.code !== 'TurnNotActive')) return refusal;
    try {
      const stored = (await this.services.storage.listApprovals(command.turnId)).find((row) => row.toolCallId === command.toolCallId);
      return stored?.sessionId === this.id && stored.decision === command.decision ? { ok: true } : refusal;
    } catch {
      // The refusal stands when the stored answer cannot be read: it is what the session knows.
      return refusal;
    }
  }

  /** RT-6: summarizes the conversation into a checkpoint; `SessionActive` while a turn runs. */
  async compactConversation(): Promise<CompactResult> {
    if (this.stopped) return this.closedError();
    return this.command({ type: 'session.compact', commandId: '' });
  }

  /** RT-6, CP-3: makes an earlier checkpoint the active one; `SessionActive` while a turn runs. */
  async rewindConversation(compactionId: unknown): Promise<RewindResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.rewindConversation.input.safeParse(compactionId);
    if (!parsed.success) return invalidInput(parsed.error);
    return this.command({ type: 'session.rewind', commandId: '', compactionId: parsed.data });
  }

  /** CP-4: reloads the conversation from storage; clears `ReloadRequired` when it succeeds. */
  async reload(): Promise<CommandResult<'reload'>> {
    if (this.stopped) return this.closedError();
    return this.command({ type: 'session.reload', commandId: '' });
  }

  /** RT-4: only enqueues; the next model call of a user turn drains the mailbox. */
  async deliverAgentMessage(message: unknown): Promise<DeliverResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.deliverAgentMessage.input.safeParse(message);
    if (!parsed.success) return invalidInput(parsed.error);
    const tokens = estimateTokens(parsed.data.text);
    if (tokens >= AGENT_MESSAGE_TOKEN_LIMIT) return { ok: false, error: { code: 'MessageTooLarge', tokens } };
    const waiting = this.env.conversation.mailbox.reduce((sum, m) => sum + estimateTokens(m.text), 0);
    if (this.env.conversation.mailbox.length >= MAILBOX_MAX_MESSAGES || waiting + tokens > MAILBOX_MAX_TOKENS) {
      return { ok: false, error: { code: 'MailboxFull', messages: this.env.conversation.mailbox.length, tokens: waiting } };
    }
    this.env.conversation.mailbox.push(parsed.data);
    return { ok: true };
  }

  /**
   * Holds the session's turns at their next checkpoint — before the next model call, everything so
   * far stored — until `releaseHold()`; the running turn reports phase `paused` when it stops there.
   * A cancel or stop still ends a held turn. Holding an already held session changes nothing.
   */
  holdAtCheckpoint(): { ok: true } | { ok: false; error: Stopped } {
    if (this.stopped) return this.closedError();
    this.env.turns.hold ??= holdGate();
    return { ok: true };
  }

  /** Lets a held turn go on from its checkpoint; later turns no longer hold. */
  releaseHold(): void {
    const hold = this.env.turns.hold;
    this.env.turns.hold = null;
    hold?.release();
  }

  /** RT-5: stored, then in force from the next tool call's authorization. */
  async setPermissionMode(mode: unknown): Promise<SetModeResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.setPermissionMode.input.safeParse(mode);
    if (!parsed.success) return invalidInput(parsed.error);
    try {
      await this.services.storage.setPermissionMode(this.id, parsed.data, this.env.config.fence);
    } catch (error) {
      return { ok: false, error: { code: 'PersistenceError', message: messageOf(error) } };
    }
    this.env.config.permissionMode = parsed.data;
    return { ok: true };
  }

  /**
   * agent.switch: the session runs `name` from its next turn on — its prompt, limits, hooks,
   * guardrails and tools. Only to an agent the current one lists in `switchTo`; only while no turn
   * runs (`SessionActive`), like compaction. Stored with a note in the conversation.
   */
  async switchAgent(name: unknown): Promise<SwitchAgentResult> {
    if (this.stopped) return this.closedError();
    const parsed = commandCatalog.switchAgent.input.safeParse(name);
    if (!parsed.success) return invalidInput(parsed.error);
    const target = this.lifecycle?.agent?.(parsed.data);
    if (!target) return { ok: false, error: { code: 'UnknownAgent', message: `no agent named '${parsed.data}'` } };
    if (parsed.data === this.env.config.agentName) return { ok: true, agent: parsed.data };
    if (!this.env.config.agent.switchTo.includes(parsed.data)) {
      return { ok: false, error: { code: 'AgentSwitchNotAllowed', message: `agent '${this.env.config.agentName}' may not switch to '${parsed.data}'` } };
    }
    const reply = await this.using(() => this.command({ type: 'session.switch_agent', commandId: '', agent: parsed.data, limits: limitsOf(target) }));
    return reply.ok ? { ok: true, agent: parsed.data } : reply;
  }

  snapshot(): SessionSnapshot {
    return {
      version: 8,
      sessionId: this.id,
      lastUpdateSequence: this.env.output.updates.lastSequence,
      permissionMode: this.env.config.permissionMode,
      busyPolicy: this.env.config.busyPolicy,
      queue: this.env.output.live.queue.map((q) => ({ turnId: q.turnId, clientRequestId: q.clientRequestId })),
      sandbox: sandboxViewOf(this.env.config.sandbox()),
      runtime: structuredClone(this.env.output.live.runtime),
    };
  }

  replayUpdates(afterSequence: unknown): ReplayResult | { ok: false; error: InvalidInput } {
    const parsed = afterSequenceSchema.safeParse(afterSequence);
    if (!parsed.success) return invalidInput(parsed.error);
    return this.env.output.updates.replay(parsed.data);
  }

  /** RT-7: the turn a client request id was accepted as, if any. */
  async acceptedTurn(clientRequestId: string): Promise<{ ok: true; turnId: string } | { ok: false; error: { code: 'NotAccepted' } }> {
    const accepted = this.actor.getSnapshot().context.accepted;
    const turnId = typeof clientRequestId === 'string' && Object.hasOwn(accepted, clientRequestId) ? accepted[clientRequestId] : undefined;
    return turnId ? { ok: true, turnId } : { ok: false, error: { code: 'NotAccepted' } };
  }

  /**
   * Closes the session: a running turn ends `actor_stopped`, queued turns stay stored (they start
   * when the session is opened again), the session leaves the runtime and its lease is released.
   * Calling it again waits for the first call.
   */
  close(mode: 'stop' | 'park' = 'stop'): Promise<void> {
    this.closing ??= this.closeOnce(mode);
    return this.closing;
  }

  /** The same as `close()`. */
  stop(): Promise<void> {
    return this.close();
  }

  /** `park` (issue 26): a running turn is left as storage has it, for the next opening to go on with. */
  private async closeOnce(mode: 'stop' | 'park'): Promise<void> {
    this.stopped = true;
    const commandId = `c${++this.commandCount}`;
    // The chart closes the session (`closing`): only once idle, the running turn's end stored and
    // announced, does it give the lease up, and then it is done. Sent from an update subscriber,
    // the stop waits behind the step in progress; the chart being done is what counts, not when.
    await new Promise<void>((resolve) => {
      const settle = (snapshot: ReturnType<typeof this.actor.getSnapshot>): void => {
        if (snapshot.status === 'active') return;
        sub.unsubscribe();
        resolve();
      };
      const sub = this.actor.subscribe({ next: settle, error: () => resolve() });
      this.actor.send({ type: mode === 'park' ? 'session.park' : 'session.stop', commandId });
      settle(this.actor.getSnapshot());
    });
    this.actor.stop();
    // Issue 26: a parked turn ends elsewhere, later: whoever waits for it here is told so.
    for (const waiters of this.env.turns.waiters.values()) for (const resolve of waiters) resolve({ status: 'parked' });
    this.env.turns.waiters.clear();
    this.env.output.updates.complete();
    await this.lifecycle?.closed(this);
  }

  private closedError(): { ok: false; error: Stopped } {
    return { ok: false, error: { code: this.lifecycle?.stopping() === false ? 'SessionClosed' : 'RuntimeStopped' } };
  }

  /**
   * Sends a command event; the chart's guards decide and leave the answer in `context.reply`.
   * The subscription comes first: a command issued while the chart handles this one (say, from an
   * update subscriber) is processed in the same flush and replaces `context.reply`, so the answer
   * must be read from the snapshot of the step that produced it.
   */
  private command<T extends CommandType>(event: CommandEvent<T>): Promise<CommandReply<T>> {
    const commandId = `c${++this.commandCount}`;
    const answered = (): CommandReply<T> | undefined => {
      const reply = this.actor.getSnapshot().context.reply;
      return reply?.commandId === commandId && isReplyTo(reply, event.type) ? reply.result : undefined;
    };
    return new Promise<CommandReply<T>>((resolve) => {
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
    const context = this.actor.getSnapshot().context;
    return context.activeTurn?.turnId === turnId || context.queue.some((q) => q.turnId === turnId);
  }

  private async storedOutcome(turnId: string): Promise<WaitResult> {
    const row = await this.services.storage.getTurn(turnId);
    if (!row || row.sessionId !== this.id) return { status: 'unknown_turn' };
    return outcomeOf(row);
  }
}

type StartTurnFailure = Exclude<StartTurnResult, { ok: true }>;

/** The outcome a stored turn row stands for; a turn a restart interrupted reads as stopped. */
function outcomeOf(row: TurnRow): TurnOutcome {
  switch (row.status) {
    case 'completed':
      return { status: 'completed', finalText: row.finalText ?? '', ...stoppedByOf(row.errorCode) };
    case 'cancelled':
      return { status: 'cancelled' };
    case 'timed_out':
      return { status: 'timed_out', message: row.errorMessage ?? '' };
    case 'failed':
      return { status: 'failed', code: (row.errorCode ?? 'model_error') as never, message: row.errorMessage ?? '' };
    case 'interrupted':
    case 'running':
    case 'queued':
      return { status: 'failed', code: 'actor_stopped', message: 'the turn was interrupted by a process restart' };
  }
}

function stoppedByOf(code: string | null): { stoppedBy?: StoppedBy } {
  return code === 'mistake_limit' || code === 'token_budget' ? { stoppedBy: code } : {};
}
