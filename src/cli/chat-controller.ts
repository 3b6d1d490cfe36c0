import { randomUUID } from 'node:crypto';
import type { SessionSnapshot } from '../runtime/session-handle.js';
import type { PermissionDecision, TurnPhase, UpdateEnvelope } from '../protocol/updates.js';
import { asChatError, PERMISSION_MODES, type ChatClient, type ChatError, type Feed, type FeedEvent, type PermissionMode, type SessionInfo } from './chat-client.js';
import { formatContext, formatError, formatGuardrail, formatOutcome, formatPlan, formatSessions, HELP, summarizeArguments } from './chat-format.js';
import type { Screen } from './chat-screen.js';

export const INPUT_PROMPT = '› ';
export const APPROVAL_PROMPT = '[a]llow once / [d]eny › ';

/** Two Ctrl+C this close together exit, whatever runs. */
const DOUBLE_INTERRUPT_MS = 1_000;
/** How long a tool call's arguments are looked for before its line is printed without them. */
const ARGUMENTS_LOOKUP_MS = 2_000;

const SPINNER: Partial<Record<TurnPhase, string>> = {
  starting: 'starting…',
  running_model: 'thinking…',
  running_tools: 'running tools…',
  compacting: 'compacting…',
};

interface RunningTurn {
  turnId: string;
}

interface PendingApproval {
  turnId: string;
  toolCallId: string;
  name: string;
}

/**
 * The conversation with one session at a time, whatever the backend: it turns the session's
 * updates into terminal output, lines typed into turns, approvals and commands, and Ctrl+C into a
 * cancel. Updates are handled one at a time, in order, even when one needs a lookup.
 */
export class ChatController {
  private sessionId: string | null = null;
  private mode: string | null = null;
  private feed: Feed | null = null;
  /** Bumped on every session switch: events of a feed already closed are dropped. */
  private generation = 0;
  private lastSequence = -1;
  private turn: RunningTurn | null = null;
  /** A turn request on its way: a Ctrl+C meanwhile cancels the turn once its id is known. */
  private starting: { cancel: boolean } | null = null;
  private readonly ended = new Set<string>();
  /** Request ids of the turns this chat started: a turn started by another client is announced as such. */
  private readonly ours = new Set<string>();
  private approval: PendingApproval | null = null;
  private readonly toolNames = new Map<string, string>();
  private streaming: 'text' | 'reasoning' | null = null;
  private events: Promise<void> = Promise.resolve();
  private lastInterrupt = -Infinity;
  private exitArmed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly client: ChatClient,
    private readonly screen: Screen,
    private readonly options: { newSessionMode?: PermissionMode; now?: () => number } = {},
  ) {}

  /** Whether a turn runs (or is being started) in the current session. */
  get busy(): boolean {
    return this.turn !== null || this.starting !== null;
  }

  get awaitingApproval(): boolean {
    return this.approval !== null;
  }

  /** Opens the given session (or a new one) and shows the prompt; a failure is reported, the prompt stays. */
  async start(sessionId?: string): Promise<void> {
    try {
      const info = sessionId ? await this.client.openSession(sessionId) : await this.client.createSession(this.newSessionOptions());
      await this.use(info, sessionId ? 'continued' : 'new');
    } catch (error) {
      this.error(error);
    }
    this.promptIfIdle();
  }

  /** Resolves when input can be taken as a script would: no turn running, or one waiting for an approval. */
  inputReady(): Promise<void> {
    if (!this.busy || this.approval) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** One line typed at the prompt; answers `exit` when the user asked to leave. */
  async submit(line: string): Promise<'exit' | void> {
    const text = line.trim();
    this.exitArmed = false;
    if (this.approval && !text.startsWith('/')) return this.answer(text);
    if (text.startsWith('/')) return this.command(text);
    if (text === '') return this.promptIfIdle();
    if (!this.sessionId) {
      this.screen.line(this.screen.paint('yellow', 'no session: /new starts one, /open ID continues one'));
      return this.promptIfIdle();
    }
    await this.startTurn(this.sessionId, text);
  }

  /** Ctrl+C: cancels the running turn; when nothing runs (or on a second one right away), answers `exit`. */
  async interrupt(): Promise<'exit' | void> {
    const now = (this.options.now ?? Date.now)();
    const quick = now - this.lastInterrupt < DOUBLE_INTERRUPT_MS;
    this.lastInterrupt = now;
    if (quick) return 'exit';
    if (this.starting) {
      this.starting.cancel = true;
      this.screen.line(this.screen.paint('yellow', 'cancelling…'));
      return;
    }
    if (this.turn && this.sessionId) return this.cancel(this.sessionId, this.turn.turnId);
    if (this.exitArmed) return 'exit';
    this.exitArmed = true;
    this.screen.line(this.screen.paint('dim', '(Ctrl+C again or Ctrl+D to exit)'));
    this.promptIfIdle();
  }

  /** Stops following the session and closes the backend (an embedded runtime stops a running turn). */
  async close(): Promise<void> {
    this.screen.spinner(null);
    this.screen.forgetPrompt();
    if (this.turn) {
      const note = this.client.kind === 'host'
        ? `the running turn ${this.turn.turnId} goes on on the host`
        : `the running turn ${this.turn.turnId} ends with this process (actor_stopped)`;
      this.screen.line(this.screen.paint('yellow', note));
    }
    this.feed?.close();
    this.feed = null;
    this.generation += 1;
    await this.client.close().catch((error: unknown) => this.error(error));
    this.screen.close();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  // ---- sessions -------------------------------------------------------------------------------

  private newSessionOptions() {
    return this.options.newSessionMode ? { permissionMode: this.options.newSessionMode } : {};
  }

  private async use(info: SessionInfo, how: 'new' | 'continued'): Promise<void> {
    this.feed?.close();
    const generation = ++this.generation;
    this.sessionId = info.sessionId;
    this.mode = info.snapshot.permissionMode;
    this.lastSequence = -1;
    this.turn = null;
    this.approval = null;
    this.streaming = null;
    this.toolNames.clear();
    this.screen.line(`${this.screen.paint('bold', `session ${info.sessionId}`)} ${this.screen.paint('dim', `(${how}, mode ${this.mode})`)}`);
    this.feed = this.client.follow(info.sessionId, (event) => {
      if (generation !== this.generation) return;
      this.events = this.events
        .then(() => (generation === this.generation ? this.handle(event) : undefined))
        .catch((error: unknown) => void this.error(error));
    });
    try {
      await this.feed.ready;
    } catch {
      // Reported by the feed's own `ended` or `connection_lost` event.
    }
  }

  // ---- turns ----------------------------------------------------------------------------------

  private async startTurn(sessionId: string, text: string): Promise<void> {
    if (this.turn) {
      this.screen.line(this.screen.paint('dim', `(a turn is running; the host decides by the session's busy policy)`));
    }
    const starting = (this.starting = { cancel: false });
    this.screen.spinner(SPINNER.starting!);
    try {
      const clientRequestId = `chat-${randomUUID()}`;
      this.ours.add(clientRequestId);
      const accepted = await this.client.startTurn(sessionId, text, clientRequestId);
      if (accepted.status === 'queued') this.screen.line(this.screen.paint('dim', `queued behind the running turn (${accepted.turnId})`));
      else if (!this.ended.has(accepted.turnId) && this.sessionId === sessionId) this.turn ??= { turnId: accepted.turnId };
      if (starting.cancel) await this.cancel(sessionId, accepted.turnId, false);
    } catch (error) {
      this.error(error);
    } finally {
      if (this.starting === starting) this.starting = null;
      if (!this.turn) this.screen.spinner(null);
      this.promptIfIdle();
    }
  }

  private async cancel(sessionId: string, turnId: string, announce = true): Promise<void> {
    if (announce) this.screen.line(this.screen.paint('yellow', 'cancelling…'));
    try {
      await this.client.cancelTurn(sessionId, turnId);
    } catch (error) {
      const failure = this.error(error);
      // The turn is over, or the host cannot be asked: the prompt comes back rather than wait for an update.
      if (['TurnNotActive', 'UnknownTurn', 'HostUnreachable', 'HostTimeout', 'SessionClosed', 'RuntimeStopped'].includes(failure.code)) {
        this.finishLocally(turnId);
      }
    }
  }

  private async answer(text: string): Promise<void> {
    const approval = this.approval!;
    const decision: PermissionDecision | null = /^(a|allow|allow once|y|yes)$/i.test(text) ? 'allow_once' : /^(d|deny|n|no)$/i.test(text) ? 'deny' : null;
    if (!decision) {
      this.screen.line(this.screen.paint('yellow', 'answer a (allow once) or d (deny)'));
      this.screen.showPrompt(APPROVAL_PROMPT);
      return;
    }
    this.approval = null;
    try {
      await this.client.resolvePermission(this.sessionId!, approval.turnId, approval.toolCallId, decision);
    } catch (error) {
      const failure = this.error(error);
      if (failure.code !== 'PermissionNotPending' && failure.code !== 'TurnNotActive' && this.turn?.turnId === approval.turnId) {
        this.approval = approval;
        this.screen.showPrompt(APPROVAL_PROMPT);
      }
    }
    this.wakeInput();
  }

  /** The turn is known to be over without its `turn_finished` (the host went away, or it ended unseen). */
  private finishLocally(turnId: string): void {
    this.ended.add(turnId);
    if (this.turn?.turnId !== turnId) return;
    this.turn = null;
    this.approval = null;
    if (this.screen.promptShown === APPROVAL_PROMPT) this.screen.forgetPrompt();
    this.screen.spinner(null);
    this.promptIfIdle();
  }

  // ---- updates --------------------------------------------------------------------------------

  private async handle(event: FeedEvent): Promise<void> {
    switch (event.kind) {
      case 'snapshot':
        return this.reconcile(event.snapshot, event.resumed);
      case 'update':
        if (event.envelope.sequence <= this.lastSequence) return;
        this.lastSequence = event.envelope.sequence;
        return this.render(event.envelope);
      case 'connection_lost':
        this.endStream();
        this.screen.line(`${formatError(event.error, this.screen.paint)} ${this.screen.paint('dim', '— the connection to the host is lost; reconnecting')}`);
        return;
      case 'connection_restored':
        this.screen.line(this.screen.paint('green', 'reconnected to the host'));
        return;
      case 'ended':
        this.endStream();
        this.screen.line(`${formatError(event.error, this.screen.paint)} ${this.screen.paint('dim', '— no more live updates from this session')}`);
        if (this.turn) this.finishLocally(this.turn.turnId);
        return;
    }
  }

  /** A snapshot: on the first connection, or when a resume could not replay what was missed. */
  private async reconcile(snapshot: SessionSnapshot, resumed: boolean): Promise<void> {
    this.lastSequence = snapshot.lastUpdateSequence;
    this.mode = snapshot.permissionMode;
    const view = snapshot.runtime as { kind: string; turnId?: string; phase?: TurnPhase; pendingApproval?: { toolCallId: string; name: string; paths: string[] } | null };
    if (resumed) this.screen.line(this.screen.paint('dim', 'some updates were missed while disconnected; caught up from the session snapshot'));
    const previous = this.turn;
    if (view.kind === 'running' && view.turnId) {
      if (previous?.turnId !== view.turnId) {
        if (previous) await this.reportEnded(previous.turnId);
        this.turn = { turnId: view.turnId };
        this.screen.line(this.screen.paint('dim', `a turn is running (${view.turnId}, ${view.phase ?? 'running'})`));
      }
      this.screen.spinner(SPINNER[view.phase ?? 'running_model'] ?? null);
      const pending = view.pendingApproval;
      if (pending && this.approval?.toolCallId !== pending.toolCallId) this.askApproval(view.turnId, pending.toolCallId, pending.name, pending.paths);
      return;
    }
    if (previous) await this.reportEnded(previous.turnId);
  }

  /** A turn that ended while its updates were not seen: its outcome, asked for. */
  private async reportEnded(turnId: string): Promise<void> {
    try {
      const state = await this.client.turnStatus(this.sessionId!, turnId);
      if (state.outcome) this.screen.line(formatOutcome(state.outcome, this.screen.paint));
    } catch (error) {
      this.error(error);
    }
    this.finishLocally(turnId);
  }

  private async render(envelope: UpdateEnvelope): Promise<void> {
    const { update, turnId } = envelope;
    const paint = this.screen.paint;
    switch (update.type) {
      case 'turn_started':
        this.turn = { turnId };
        if (!this.ours.has(update.clientRequestId)) this.screen.line(paint('dim', `a turn started from elsewhere (${turnId})`));
        this.screen.spinner(SPINNER.starting!);
        return;
      case 'phase_changed':
        this.screen.spinner(SPINNER[update.phase] ?? null);
        if (update.phase === 'compacting') {
          this.endStream();
          this.screen.line(paint('dim', 'compacting the conversation…'));
        }
        return;
      case 'text_delta':
        if (this.streaming === 'reasoning') this.endStream();
        this.streaming = 'text';
        this.screen.write(update.text);
        return;
      case 'reasoning_delta':
        if (this.streaming === 'text') this.endStream();
        // Dimmed; without styles, marked where it starts.
        if (this.streaming !== 'reasoning' && !this.screen.color) this.screen.write('(reasoning) ');
        this.streaming = 'reasoning';
        this.screen.write(paint(['dim', 'italic'], update.text));
        return;
      case 'draft_cleared':
        // The draft became the stored answer, or was dropped (a compaction follows then, and says so).
        this.endStream();
        return;
      case 'tool_call_started': {
        this.endStream();
        this.toolNames.set(update.toolCallId, update.name);
        const call = await this.lookUpCall(update.toolCallId);
        const summary = call ? summarizeArguments(call.argumentsText) : '';
        this.screen.line(`${paint('cyan', '▸')} ${paint('bold', update.name)}${summary ? `  ${paint('dim', summary)}` : ''}`);
        return;
      }
      case 'tool_call_progress':
        return;
      case 'tool_call_finished': {
        this.endStream();
        const name = this.toolNames.get(update.toolCallId) ?? 'tool';
        const ok = update.status === 'succeeded';
        this.screen.line(`  ${paint(ok ? 'green' : update.status === 'denied' || update.status === 'cancelled' ? 'yellow' : 'red', `${ok ? '✓' : '✗'} ${name} ${update.status}`)}`);
        return;
      }
      case 'permission_requested':
        this.endStream();
        this.askApproval(turnId, update.toolCallId, update.name, update.paths);
        return;
      case 'permission_resolved': {
        if (this.approval?.toolCallId === update.toolCallId) this.approval = null;
        if (!this.approval && this.screen.promptShown === APPROVAL_PROMPT) this.screen.forgetPrompt();
        const said = { allow_once: 'allowed once', deny: 'denied', cancelled: 'approval withdrawn: the turn was cancelled', actor_stopped: 'approval withdrawn: the session stopped' }[update.decision];
        this.screen.line(paint('dim', `  ${said}`));
        this.wakeInput();
        return;
      }
      case 'plan_updated':
        this.endStream();
        for (const line of formatPlan(update.plan, paint)) this.screen.line(line);
        return;
      case 'queue_updated':
        if (update.queue.length > 0) this.screen.line(paint('dim', `${update.queue.length} turn(s) queued`));
        return;
      case 'guardrail_triggered':
        this.endStream();
        this.screen.line(formatGuardrail(update, paint));
        return;
      case 'turn_finished':
        this.endStream();
        this.ended.add(turnId);
        this.screen.line(formatOutcome(update.outcome, paint));
        if (this.turn?.turnId === turnId || this.turn === null) {
          this.turn = null;
          this.approval = null;
          if (this.screen.promptShown === APPROVAL_PROMPT) this.screen.forgetPrompt();
          this.screen.spinner(null);
          this.promptIfIdle();
        }
        return;
    }
  }

  private askApproval(turnId: string, toolCallId: string, name: string, paths: string[]): void {
    this.screen.spinner(null);
    this.approval = { turnId, toolCallId, name };
    const where = paths.length > 0 ? `: ${paths.join(', ')}` : '';
    this.screen.line(`${this.screen.paint('yellow', '?')} ${this.screen.paint('bold', name)} needs your approval${where}`);
    this.screen.showPrompt(APPROVAL_PROMPT);
    this.wakeInput();
  }

  private async lookUpCall(toolCallId: string) {
    if (!this.sessionId) return null;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ARGUMENTS_LOOKUP_MS)));
    try {
      return await Promise.race([this.client.toolCall(this.sessionId, toolCallId).catch(() => null), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private endStream(): void {
    if (this.streaming) this.screen.endLine();
    this.streaming = null;
  }

  // ---- commands -------------------------------------------------------------------------------

  private async command(text: string): Promise<'exit' | void> {
    const [name = '', ...args] = text.slice(1).split(/\s+/);
    try {
      switch (name) {
        case 'exit':
        case 'quit':
          return 'exit';
        case 'help':
          for (const line of HELP) this.screen.line(line);
          break;
        case 'sessions':
          for (const line of formatSessions(await this.client.listSessions(20), this.sessionId, this.screen.paint)) this.screen.line(line);
          break;
        case 'new':
        case 'open': {
          if (this.busy) {
            this.screen.line(this.screen.paint('yellow', 'a turn is running: Ctrl+C cancels it first'));
            break;
          }
          if (name === 'open' && !args[0]) {
            this.screen.line(this.screen.paint('yellow', 'usage: /open SESSION_ID'));
            break;
          }
          const info = name === 'new' ? await this.client.createSession(this.newSessionOptions()) : await this.client.openSession(args[0]!);
          await this.use(info, name === 'new' ? 'new' : 'continued');
          break;
        }
        case 'mode':
          await this.setMode(args[0]);
          break;
        case 'compact': {
          const session = this.requireSession();
          if (!session) break;
          this.screen.line(this.screen.paint('dim', 'compacting…'));
          const { compactionId } = await this.client.compact(session);
          this.screen.line(this.screen.paint('green', `compacted (checkpoint ${compactionId})`));
          break;
        }
        case 'context': {
          const session = this.requireSession();
          if (!session) break;
          for (const line of formatContext(await this.client.context(session), this.screen.paint)) this.screen.line(line);
          break;
        }
        default:
          this.screen.line(this.screen.paint('yellow', `unknown command /${name} (/help lists them)`));
      }
    } catch (error) {
      this.error(error);
    }
    if (this.approval) this.screen.showPrompt(APPROVAL_PROMPT);
    else this.promptIfIdle();
  }

  private async setMode(mode: string | undefined): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    if (mode === undefined) {
      this.screen.line(`mode: ${this.mode ?? 'unknown'}`);
      return;
    }
    if (!PERMISSION_MODES.includes(mode as PermissionMode)) {
      this.screen.line(this.screen.paint('yellow', `usage: /mode ${PERMISSION_MODES.join('|')}`));
      return;
    }
    await this.client.setPermissionMode(session, mode as PermissionMode);
    this.mode = mode;
    this.screen.line(this.screen.paint('green', `mode: ${mode}`) + this.screen.paint('dim', ' (from the next tool call on)'));
  }

  private requireSession(): string | null {
    if (!this.sessionId) this.screen.line(this.screen.paint('yellow', 'no session: /new starts one, /open ID continues one'));
    return this.sessionId;
  }

  // ---- output helpers -------------------------------------------------------------------------

  private promptIfIdle(): void {
    if (this.approval) return;
    if (!this.busy && this.screen.promptShown !== INPUT_PROMPT) this.screen.showPrompt(INPUT_PROMPT);
    this.wakeInput();
  }

  private wakeInput(): void {
    if (this.busy && !this.approval) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private error(error: unknown): ChatError {
    const failure = asChatError(error);
    this.endStream();
    this.screen.line(formatError(failure, this.screen.paint));
    return failure;
  }
}

