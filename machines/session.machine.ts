import { assign, enqueueActions, fromCallback, sendTo, setup, type DoneActorEvent, type ErrorActorEvent, type EventObject } from 'xstate';
import type { BusyPolicy } from '../src/protocol/commands.js';
import type { CommandOk, CommandRefusal } from '../src/protocol/command-catalog.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { PermissionDecision, QueuedTurnView, TurnResumeReason } from '../src/protocol/updates.js';
import { turnMachine, type TurnEvent, type TurnInterrupt, type TurnLimits, type TurnOutput } from './turn.machine.js';
import type { ApprovalAnswerParams, FinishTurnOutput, PermissionRequestParams, QueuedTurnParams, SessionEffects } from './session.effects.js';
import type { GuardrailTrackers } from './guardrails.js';
import { notProvided } from './not-provided.js';
import { EFFECT_PORT, doneOutput, failedError, requestEffectAction, type EffectErrorTraits, type EffectAbort, type EffectCall, type EffectCancel, type EffectReply, type EffectRequest } from './effect-port.js';
import { messageOf } from '../src/protocol/error-message.js';

/**
 * A session (000 §1–§2): the only place turns start. Commands arrive as events; the guards
 * decide (reload required → duplicate request → busy, by the session's busy policy → accept) and
 * the decision is left in `context.reply` for the caller, so the chart — not the handle — owns the
 * rules (XS-3). Turns that arrive while one runs are rejected, queued, or queued after cancelling
 * the running one (RL-2); a queued turn starts when the session would otherwise become idle.
 * Closing is the chart's too: a stop is taken at once but acted on only when the session is idle —
 * the running turn stopped, its end stored and announced — and only then is the lease given up
 * (`closing`), so a close can never overtake the end of a turn, however they are timed.
 */

export interface SessionInput {
  sessionId: string;
  limits: TurnLimits;
  /** clientRequestId → turnId for turns already accepted (loaded from storage on open). */
  accepted: Record<string, string>;
  reloadRequired: boolean;
  busyPolicy: BusyPolicy;
  /** Turns stored `queued` (loaded on open): they start one by one. */
  queue: QueuedTurnView[];
  /** GR-2a: the loop and mistake trackers as the session's last stored turn left them. */
  trackers: GuardrailTrackers;
  /**
   * Issue 26: a turn left running by a host that went away, to go on before anything else; null for
   * none. A session that resumes its turns (`resumesTurns`) also leaves its running turn to the next
   * opening when it is parked (evicted while it waits for a human, or its host shutting down).
   */
  resume?: ResumedTurn | null;
  resumesTurns?: boolean;
}

/** Issue 26: the turn to go on with, why, and what its approvals came to while no host held it. */
export interface ResumedTurn extends QueuedTurnView {
  reason: TurnResumeReason;
  /** Calls whose approval was asked for and not yet answered: an answer may come before the turn asks again. */
  awaited: string[];
  /** Answers stored for calls that have no result yet: given to the call as soon as it asks again. */
  answered: Record<string, HeldAnswer>;
}

/** An answer the session holds until the call it is for asks (issue 26). */
export interface HeldAnswer {
  decision: PermissionDecision;
  principal?: string;
}

/**
 * What the chart answers each command with: a refusal of the catalog command the event stands for
 * (`src/protocol/command-catalog.ts`), with the codes the chart itself decides, or a success with
 * the fields the chart knows (the handle adds the rest).
 */
interface CommandReplies {
  'session.start_turn': CommandOk<'startTurn'> | CommandRefusal<'startTurn', 'Busy' | 'ReloadRequired' | 'SessionActive'>;
  'session.cancel_turn': CommandOk<'cancelTurn'> | CommandRefusal<'cancelTurn', 'TurnNotActive'>;
  'session.resolve_permission': CommandOk<'resolvePermission'> | CommandRefusal<'resolvePermission', 'TurnNotActive' | 'PermissionNotPending'>;
  'session.compact':
    | CommandOk<'compactConversation'>
    | CommandRefusal<'compactConversation', 'SessionActive' | 'ReloadRequired' | 'NothingToCompact' | 'CompactionFailed'>;
  'session.rewind': CommandOk<'rewindConversation'> | CommandRefusal<'rewindConversation', 'SessionActive' | 'ReloadRequired' | 'UnknownCompaction' | 'CompactionFailed'>;
  'session.reload': CommandOk<'reload'> | CommandRefusal<'reload', 'SessionActive' | 'ReloadRequired' | 'CompactionFailed'>;
  /** The handle adds the agent it switched to. */
  'session.switch_agent': { ok: true } | CommandRefusal<'switchAgent', 'SessionActive' | 'PersistenceError'>;
  'session.stop': { ok: true };
  'session.park': { ok: true };
}

export type CommandType = Commanded['type'];
export type CommandEvent<T extends CommandType> = Extract<Commanded, { type: T }>;

/** The chart's answer to a command of type `T`; without `T`, to any command. */
export type CommandReply<T extends CommandType = CommandType> = CommandReplies[T];

/** The answer to one command, tagged with the command's id and type. */
type ReplyTo<T extends CommandType> = { [P in T]: { commandId: string; command: P; result: CommandReplies[P] } }[T];

/** Whether `reply` answers a command of type `type` (the reply's result then has that command's type). */
export function isReplyTo<T extends CommandType>(reply: ReplyTo<CommandType> | ReplyTo<T>, type: T): reply is ReplyTo<T> {
  return reply.command === type;
}

export interface SessionContext extends SessionInput {
  activeTurn: QueuedTurnView | null;
  pendingPermission: { turnId: string; toolCallId: string } | null;
  lastOutcome: { turnId: string; outcome: TurnOutcome } | null;
  /** The answer to the last command, tagged with the command's id and type. */
  reply: ReplyTo<CommandType> | null;
  /** A compaction, rewind, reload or agent switch in progress, and the command waiting for its answer; a switch brings its agent's limits. */
  maintenance: { commandId: string; command: Maintenance['type']; effect: EffectCall<SessionEffects>; limits?: TurnLimits } | null;
  /** The session is being stopped: nothing more starts, and once idle it closes. */
  stopping: boolean;
  /** Issue 26: the active turn goes on from where a departed host left it (why), null for a turn begun here. */
  resuming: TurnResumeReason | null;
  /** Issue 26: calls of the active turn whose approval is awaited but which have not asked again since the session opened. */
  awaitedApprovals: string[];
  /** Issue 26: answers for calls of the active turn that have not asked (again) yet. */
  heldAnswers: Record<string, HeldAnswer>;
}

export type SessionEvent =
  | { type: 'session.start_turn'; commandId: string; turnId: string; clientRequestId: string }
  | { type: 'session.cancel_turn'; commandId: string; turnId: string }
  /** `principal`: who answered (issue 25), for the audit row; absent, the session's owner. */
  | { type: 'session.resolve_permission'; commandId: string; turnId: string; toolCallId: string; decision: PermissionDecision; principal?: string }
  | { type: 'session.compact'; commandId: string }
  | { type: 'session.rewind'; commandId: string; compactionId: string }
  | { type: 'session.reload'; commandId: string }
  /** agent.switch: the session's agent (already checked against the allow-list) from the next turn on. */
  | { type: 'session.switch_agent'; commandId: string; agent: string; limits: TurnLimits }
  /**
   * Issue 30: a `switch_agent` call switched the agent inside a run (stored already): its limits
   * apply from the next turn on; the running turn keeps the limits it started with.
   */
  | { type: 'session.agent_installed'; limits: TurnLimits }
  | { type: 'session.stop'; commandId: string }
  /**
   * Issue 26: close without ending the running turn (an eviction while it waits for a human, the
   * host shutting down): its effects are abandoned, and the next opening goes on with it. A session
   * that does not resume its turns takes it as a stop.
   */
  | { type: 'session.park'; commandId: string }
  | { type: 'session.require_reload' }
  | { type: 'turn.permission_requested'; turnId: string; toolCallId: string; name: string; paths: string[] }
  | { type: 'turn.permission_settled'; turnId: string }
  | EffectReply;

type Maintenance = Extract<SessionEvent, { type: 'session.compact' | 'session.rewind' | 'session.reload' | 'session.switch_agent' }>;

function maintenanceEffect(sessionId: string, event: Maintenance): EffectCall<SessionEffects> {
  if (event.type === 'session.switch_agent') return { name: 'switchAgent', input: { sessionId, agent: event.agent } };
  if (event.type === 'session.rewind') return { name: 'rewindConversation', input: { sessionId, compactionId: event.compactionId } };
  return event.type === 'session.compact' ? { name: 'compact', input: { sessionId } } : { name: 'reloadConversation', input: { sessionId } };
}

/**
 * A failed maintenance effect as its command's refusal: the code the effect's error names
 * (`commandCode`) when the command may answer it, else `fallback`; and the error's message.
 */
function maintenanceFailure<C extends string>(error: unknown, known: readonly C[], fallback: C): { ok: false; error: { code: C; message: string } } {
  const named = (error as { commandCode?: unknown } | null)?.commandCode;
  return { ok: false, error: { code: known.find((code) => code === named) ?? fallback, message: messageOf(error) } };
}

/** The answer to a finished maintenance command: done (with a compaction's id), or failed. */
function maintenanceReply(maintenance: NonNullable<SessionContext['maintenance']>, event: EventObject): ReplyTo<Maintenance['type']> {
  const { commandId, command } = maintenance;
  const failed = event.type === 'effect.failed';
  const error = failedError(event);
  switch (command) {
    case 'session.compact':
      return reply(
        { type: command, commandId },
        failed
          ? maintenanceFailure(error, ['NothingToCompact', 'ReloadRequired'], 'CompactionFailed')
          : { ok: true, compactionId: doneOutput<{ compactionId: string }>(event)?.compactionId ?? '' },
      );
    case 'session.rewind':
      return reply({ type: command, commandId }, failed ? maintenanceFailure(error, ['UnknownCompaction', 'ReloadRequired'], 'CompactionFailed') : { ok: true });
    case 'session.reload':
      return reply({ type: command, commandId }, failed ? maintenanceFailure(error, ['ReloadRequired'], 'CompactionFailed') : { ok: true });
    case 'session.switch_agent':
      // The switch's only failure is its write (`commandCode` PersistenceError); anything else reads as one too.
      return reply({ type: command, commandId }, failed ? maintenanceFailure(error, [], 'PersistenceError') : { ok: true });
  }
}

type Commanded = Extract<SessionEvent, { commandId: string }>;

/** An answer good for each of the commands `T` (an action several transitions share answers all of them). */
type ForEvery<T extends CommandType> = { [P in T]: (result: CommandReplies[P]) => void }[T] extends (result: infer R) => void ? R : never;

function reply<T extends CommandType>(event: { type: T; commandId: string }, result: ForEvery<T> & CommandReplies[T]): ReplyTo<T> {
  return { commandId: event.commandId, command: event.type, result };
}

/**
 * `assign` for an action that takes the command it answers as params (`E`, the events of the
 * transitions it is on). The types are given, not inferred: setup must know every action's params
 * while it types `dropQueue`'s enqueued actions.
 */
function answer<E extends Commanded>(assignment: Parameters<typeof assign<SessionContext, SessionEvent, E, SessionEvent, never>>[0]) {
  return assign<SessionContext, SessionEvent, E, SessionEvent, never>(assignment);
}

/** The `params` of an action that answers a command: the transition's event, typed as that transition's. */
const theCommand = <E>({ event }: { event: E }): E => event;

type StartTurn = Extract<SessionEvent, { type: 'session.start_turn' }>;

function queuedTurn(event: StartTurn): QueuedTurnView {
  return { turnId: event.turnId, clientRequestId: event.clientRequestId };
}

// The turn's events and its end, read on the transitions that take them.
const permissionRequestOf = (event: SessionEvent) => event as Extract<SessionEvent, { type: 'turn.permission_requested' }>;
const permissionAnswerOf = (event: SessionEvent) => event as Extract<SessionEvent, { type: 'session.resolve_permission' }>;
const requestParams = ({ event }: { event: SessionEvent }): PermissionRequestParams => {
  const request = permissionRequestOf(event);
  return { turnId: request.turnId, toolCallId: request.toolCallId, name: request.name, paths: request.paths };
};
const answerParams = ({ event }: { event: SessionEvent }): ApprovalAnswerParams => {
  const answer = permissionAnswerOf(event);
  return { turnId: answer.turnId, toolCallId: answer.toolCallId, decision: answer.decision, ...(answer.principal !== undefined && { principal: answer.principal }) };
};
const turnOutputOf = (event: EventObject) => (event as DoneActorEvent<TurnOutput>).output;
const turnErrorOf = (event: EventObject) => (event as ErrorActorEvent).error;

export const sessionMachine = setup({
  types: {
    input: {} as SessionInput,
    context: {} as SessionContext,
    events: {} as SessionEvent,
  },
  actors: {
    turn: turnMachine,
    /** Runs every effect the session's charts request (see machines/effect-port.ts); supplied by the runtime. */
    effectPort: fromCallback<EffectRequest | EffectCancel | EffectAbort>(notProvided('session', 'effectPort')),
  },
  delays: {
    /** Only entered when the agent has a run timeout (`hasRunTimeout`). */
    runTimeout: ({ context }) => context.limits.runTimeoutMs ?? 0,
  },
  guards: {
    isReloadRequired: ({ context }) => context.reloadRequired,
    isDuplicateRequest: ({ context, event }) =>
      event.type === 'session.start_turn' && Object.hasOwn(context.accepted, event.clientRequestId),
    isActiveTurn: ({ context, event }) => 'turnId' in event && context.activeTurn?.turnId === event.turnId,
    isQueuedTurn: ({ context, event }) => 'turnId' in event && context.queue.some((q) => q.turnId === event.turnId),
    /** A queued turn starts unless the session is being stopped (its queue then waits in storage). */
    startsQueuedTurn: ({ context }) => context.queue.length > 0 && !context.stopping,
    isStopping: ({ context }) => context.stopping,
    policyEnqueues: ({ context }) => context.busyPolicy === 'enqueue',
    policyInterrupts: ({ context }) => context.busyPolicy === 'interrupt',
    hasRunTimeout: ({ context }) => context.limits.runTimeoutMs !== null,
    isPendingPermission: ({ context, event }) =>
      event.type === 'session.resolve_permission' &&
      context.pendingPermission?.turnId === event.turnId &&
      context.pendingPermission.toolCallId === event.toolCallId,
    /** Issue 26: a turn to go on with, unless the session is being stopped. */
    hasTurnToResume: ({ context }) => context.resume != null && !context.stopping,
    /** Issue 26: an answer for a call of the resumed turn that has not asked again yet: held until it does. */
    isAwaitedApproval: ({ context, event }) =>
      event.type === 'session.resolve_permission' && context.activeTurn?.turnId === event.turnId && context.awaitedApprovals.includes(event.toolCallId),
    /** Issue 26: the call asking already has its answer (given while no host held the session, or before it asked again). */
    hasHeldAnswer: ({ context, event }) => event.type === 'turn.permission_requested' && Object.hasOwn(context.heldAnswers, event.toolCallId),
    turnResumes: ({ context }) => context.resumesTurns === true,
    /** Issue 26: the turn's end was refused because another host holds the session: its end is not this host's to announce. */
    finishOwnedElsewhere: ({ event }) => doneOutput<FinishTurnOutput>(event)?.ownedElsewhere === true,
  },
  actions: {
    requestEffect: requestEffectAction<SessionContext, SessionEvent, SessionEffects>(),
    /** Emits `turn_started` once the turn is the active one (RT-1). */
    emitTurnStarted: notProvided('session', 'emitTurnStarted'),
    /** Emits `permission_requested` once the session can accept the answer (RT-16). */
    emitPermissionRequested: notProvided<[unknown, PermissionRequestParams]>('session', 'emitPermissionRequested'),
    /** Emits `turn_finished` and releases waiters once the terminal status is stored. */
    announceTurnFinished: notProvided('session', 'announceTurnFinished'),
    /** Stores the turn the `session.start_turn` event just queued, with its input and its run (the write the service acknowledges). */
    storeQueuedTurn: notProvided('session', 'storeQueuedTurn'),
    /** A queued turn cancelled before it started: it ends `cancelled` (stored, waiters told). */
    settleCancelledQueuedTurn: notProvided<[unknown, QueuedTurnParams]>('session', 'settleCancelledQueuedTurn'),
    /** Announces the queue after it changed (`queue_updated`). */
    emitQueueUpdated: notProvided('session', 'emitQueueUpdated'),
    // The running turn is interrupted (`turn.interrupt`): the user cancels it (or a new turn replaces it), the run passes its time limit (RL-3), the session stops.
    cancelTurn: sendTo('turn', { type: 'turn.interrupt', reason: 'cancel' } satisfies TurnInterrupt),
    timeOutTurn: sendTo('turn', { type: 'turn.interrupt', reason: 'timeout', limit: 'run' } satisfies TurnInterrupt),
    stopTurn: sendTo('turn', { type: 'turn.interrupt', reason: 'stop' } satisfies TurnInterrupt),
    /** The user's answer goes to the turn, which passes it to the call that asked. */
    forwardPermissionAnswer: sendTo('turn', ({ event }) => {
      const answer = permissionAnswerOf(event);
      return { type: 'turn.resolve_permission', toolCallId: answer.toolCallId, decision: answer.decision, principal: answer.principal } satisfies TurnEvent;
    }),
    /** Issue 26: keeps an answer in storage before it reaches the call (the runtime's write; the reply waits for it). */
    storeApprovalAnswer: notProvided<[unknown, ApprovalAnswerParams]>('session', 'storeApprovalAnswer'),
    /** Issue 26: a cancel of the running turn is stored, so a host that dies before the turn ends does not resume it. */
    storeCancelRequest: notProvided('session', 'storeCancelRequest'),
    /** Issue 26: emits `turn_resumed` as the turn a departed host left goes on here. */
    emitTurnResumed: notProvided('session', 'emitTurnResumed'),
    /** Issue 26: parking: every effect the turn and its calls have in flight is abandoned (aborted, no reply). */
    abandonTurnEffects: notProvided('session', 'abandonTurnEffects'),
    /** Issue 26: the resumed turn becomes the active one, with what its approvals came to. */
    resumeTurn: assign(({ context }) => {
      const resume = context.resume!;
      return {
        activeTurn: { turnId: resume.turnId, clientRequestId: resume.clientRequestId },
        accepted: { ...context.accepted, [resume.clientRequestId]: resume.turnId },
        resuming: resume.reason,
        awaitedApprovals: resume.awaited,
        heldAnswers: resume.answered,
        resume: null,
      };
    }),
    holdAnswer: assign({
      heldAnswers: ({ context, event }) => {
        const answer = permissionAnswerOf(event);
        return { ...context.heldAnswers, [answer.toolCallId]: { decision: answer.decision, ...(answer.principal !== undefined && { principal: answer.principal }) } };
      },
      awaitedApprovals: ({ context, event }) => context.awaitedApprovals.filter((id) => id !== permissionAnswerOf(event).toolCallId),
    }),
    /** The call asked: the answer held for it goes to the turn, which is waiting for it by now. */
    forwardHeldAnswer: sendTo('turn', ({ context, event }) => {
      const request = permissionRequestOf(event);
      const held = context.heldAnswers[request.toolCallId]!;
      return { type: 'turn.resolve_permission', toolCallId: request.toolCallId, decision: held.decision, principal: held.principal } satisfies TurnEvent;
    }),
    dropHeldAnswer: assign({
      heldAnswers: ({ context, event }) => {
        const { [permissionRequestOf(event).toolCallId]: _given, ...rest } = context.heldAnswers;
        return rest;
      },
      awaitedApprovals: ({ context, event }) => context.awaitedApprovals.filter((id) => id !== permissionRequestOf(event).toolCallId),
    }),
    markReloadRequired: assign({ reloadRequired: true }),
    /** The turn of a `session.start_turn` starts at once: it is the active turn, its request is accepted and answered. */
    acceptTurn: answer<StartTurn>(({ context }, e) => ({
      activeTurn: queuedTurn(e),
      accepted: { ...context.accepted, [e.clientRequestId]: e.turnId },
      reply: reply(e, { ok: true, turnId: e.turnId }),
    })),
    /** The trackers come back with the outcome: the session keeps them for its next turn (GR-2a). */
    recordTurnEnd: assign({
      lastOutcome: ({ context, event }) => ({ turnId: context.activeTurn!.turnId, outcome: turnOutputOf(event).outcome }),
      trackers: ({ event }) => turnOutputOf(event).trackers,
    }),
    /** An error escaping the turn chart is a defect, reported as a typed failure rather than a hang. */
    recordTurnCrash: assign({
      lastOutcome: ({ context, event }) => ({
        turnId: context.activeTurn!.turnId,
        outcome: { status: 'failed', code: 'actor_stopped', message: `turn actor failed: ${String(turnErrorOf(event))}` },
      }),
    }),
    /** The request the turn passes on is recorded before it is announced, so an answer right away finds it pending. */
    recordPermissionRequest: assign({
      pendingPermission: ({ event }) => {
        const request = permissionRequestOf(event);
        return { turnId: request.turnId, toolCallId: request.toolCallId };
      },
    }),
    clearPermissionRequest: assign({ pendingPermission: null }),
    clearActiveTurn: assign({ activeTurn: null, pendingPermission: null, resuming: null, awaitedApprovals: [], heldAnswers: {} }),
    /** A finished turn whose row was never written did not happen: its request id may be sent again. */
    recordFinish: assign({
      accepted: ({ context, event }) => {
        const stored = doneOutput<FinishTurnOutput>(event)?.stored !== false;
        const request = context.activeTurn?.clientRequestId;
        if (stored || request === undefined) return context.accepted;
        const { [request]: _forgotten, ...rest } = context.accepted;
        return rest;
      },
    }),
    /** Queues the turn of a `session.start_turn`, remembering its request as accepted and answering it as queued. */
    enqueue: answer<StartTurn>(({ context }, e) => ({
      queue: [...context.queue, queuedTurn(e)],
      accepted: { ...context.accepted, [e.clientRequestId]: e.turnId },
      reply: reply(e, { ok: true, turnId: e.turnId, queued: true }),
    })),
    /** RL-2's interrupt: the new turn (`enqueue`, next) replaces any turn still waiting; those end `cancelled`. */
    dropQueue: enqueueActions(({ context, enqueue: act }) => {
      for (const waiting of context.queue) act({ type: 'settleCancelledQueuedTurn', params: { turnId: waiting.turnId } });
      act.assign({ queue: [] });
    }),
    markStopping: assign({ stopping: true }),
    /** Makes the head of the queue the active turn. */
    startQueuedTurn: assign({
      activeTurn: ({ context }) => context.queue[0] ?? null,
      queue: ({ context }) => context.queue.slice(1),
    }),
    // The actions that answer a command take it as their params (`params: theCommand`), typed as the
    // events of the transitions they are on: one not listed here does not compile.
    dequeue: answer<CommandEvent<'session.cancel_turn'>>({
      queue: ({ context }, e) => context.queue.filter((q) => q.turnId !== e.turnId),
      reply: (_, e) => reply(e, { ok: true }),
    }),
    replyReloadRequired: answer<CommandEvent<'session.start_turn' | 'session.compact'>>({
      reply: (_, e) => reply(e, { ok: false, error: { code: 'ReloadRequired' } }),
    }),
    replyDuplicate: answer<StartTurn>({
      reply: ({ context }, e) => reply(e, { ok: true, turnId: context.accepted[e.clientRequestId] ?? '' }),
    }),
    replyBusy: answer<StartTurn>({
      reply: ({ context }, e) => reply(e, { ok: false, error: { code: 'Busy', turnId: context.activeTurn?.turnId ?? '' } }),
    }),
    replyOk: answer<CommandEvent<'session.stop' | 'session.park' | 'session.cancel_turn' | 'session.resolve_permission'>>({
      reply: (_, e) => reply(e, { ok: true }),
    }),
    replyTurnNotActive: answer<CommandEvent<'session.cancel_turn' | 'session.resolve_permission'>>({
      reply: (_, e) => reply(e, { ok: false, error: { code: 'TurnNotActive' } }),
    }),
    beginMaintenance: answer<Maintenance>({
      maintenance: ({ context }, e) => ({
        commandId: e.commandId,
        command: e.type,
        effect: maintenanceEffect(context.sessionId, e),
        ...(e.type === 'session.switch_agent' && { limits: e.limits }),
      }),
    }),
    replySessionActive: answer<CommandEvent<'session.start_turn' | Maintenance['type']>>({
      reply: (_, e) => reply(e, { ok: false, error: { code: 'SessionActive' } }),
    }),
    replyMaintenanceDone: assign({
      reply: ({ context, event }) => (context.maintenance ? maintenanceReply(context.maintenance, event) : context.reply),
      // A switched agent's limits apply from the next turn on: no turn runs while maintaining.
      limits: ({ context }) => context.maintenance?.limits ?? context.limits,
      reloadRequired: false,
      maintenance: null,
    }),
    installAgentLimits: assign({ limits: ({ context, event }) => (event.type === 'session.agent_installed' ? event.limits : context.limits) }),
    replyMaintenanceFailed: assign({
      reply: ({ context, event }) => (context.maintenance ? maintenanceReply(context.maintenance, event) : context.reply),
      reloadRequired: ({ context, event }) =>
        context.reloadRequired || (failedError(event) as EffectErrorTraits)?.reloadRequired === true,
      maintenance: null,
    }),
    replyPermissionNotPending: answer<CommandEvent<'session.resolve_permission'>>({
      reply: (_, e) => reply(e, { ok: false, error: { code: 'PermissionNotPending' } }),
    }),
  },
}).createMachine({
  id: 'session',
  // Input fields listed one by one, not spread: spreading and then adding fields is slow in V8 (docs/architecture.md).
  context: ({ input }) => ({
    sessionId: input.sessionId,
    limits: input.limits,
    accepted: input.accepted,
    reloadRequired: input.reloadRequired,
    busyPolicy: input.busyPolicy,
    queue: input.queue,
    trackers: input.trackers,
    resume: input.resume ?? null,
    resumesTurns: input.resumesTurns ?? false,
    resuming: null,
    awaitedApprovals: [],
    heldAnswers: {},
    activeTurn: null,
    pendingPermission: null,
    lastOutcome: null,
    reply: null,
    maintenance: null,
    stopping: false,
  }),
  // One effect port serves the session, its turn and the turn's tool calls for the session's lifetime.
  invoke: { id: EFFECT_PORT, systemId: EFFECT_PORT, src: 'effectPort' },
  initial: 'idle',
  on: {
    'session.require_reload': { actions: 'markReloadRequired' },
    'session.agent_installed': { actions: 'installAgentLimits' },
    // A stop is answered at once; the session closes when it is next idle (a turn finishing, a
    // maintenance under way end first). Queued turns stay stored and queued: they start when the session is opened again.
    'session.stop': { actions: ['markStopping', { type: 'replyOk', params: theCommand }] },
    // Nothing is running to leave behind: a park is a stop.
    'session.park': { actions: ['markStopping', { type: 'replyOk', params: theCommand }] },
    'session.cancel_turn': [
      { guard: 'isQueuedTurn', actions: [{ type: 'dequeue', params: theCommand }, { type: 'settleCancelledQueuedTurn', params: ({ event }) => ({ turnId: event.turnId }) }, 'emitQueueUpdated'] },
      { actions: { type: 'replyTurnNotActive', params: theCommand } },
    ],
    'session.resolve_permission': { actions: { type: 'replyTurnNotActive', params: theCommand } },
    // RT-6: compaction, rewind and reload only while nothing else runs.
    'session.compact': { actions: { type: 'replySessionActive', params: theCommand } },
    'session.rewind': { actions: { type: 'replySessionActive', params: theCommand } },
    'session.reload': { actions: { type: 'replySessionActive', params: theCommand } },
    // agent.switch waits for the running turn to end, like compaction: the turn keeps the agent it started with.
    'session.switch_agent': { actions: { type: 'replySessionActive', params: theCommand } },
  },
  states: {
    idle: {
      always: [
        // Issue 26: a turn a departed host left running goes on first, under its own id.
        { guard: 'hasTurnToResume', target: 'running', actions: ['resumeTurn', 'emitTurnResumed'] },
        // A queued turn starts as soon as nothing runs: after the turn before it, or when the session opens.
        { guard: 'startsQueuedTurn', target: 'running', actions: ['startQueuedTurn', 'emitTurnStarted', 'emitQueueUpdated'] },
        // Idle is the one way to close: the last turn's end is stored and announced by now.
        { guard: 'isStopping', target: 'closing' },
      ],
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: { type: 'replyReloadRequired', params: theCommand } },
          { guard: 'isDuplicateRequest', actions: { type: 'replyDuplicate', params: theCommand } },
          { target: 'running', actions: [{ type: 'acceptTurn', params: theCommand }, 'emitTurnStarted'] },
        ],
        'session.compact': [
          { guard: 'isReloadRequired', actions: { type: 'replyReloadRequired', params: theCommand } },
          { target: 'maintaining', actions: { type: 'beginMaintenance', params: theCommand } },
        ],
        'session.rewind': { target: 'maintaining', actions: { type: 'beginMaintenance', params: theCommand } },
        'session.reload': { target: 'maintaining', actions: { type: 'beginMaintenance', params: theCommand } },
        'session.switch_agent': { target: 'maintaining', actions: { type: 'beginMaintenance', params: theCommand } },
      },
    },
    running: {
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({
          sessionId: context.sessionId,
          turnId: context.activeTurn!.turnId,
          limits: context.limits,
          trackers: context.trackers,
          resume: context.resuming,
        }),
        // The trackers come back with the outcome: the session keeps them for its next turn (GR-2a).
        onDone: { target: 'finishing', actions: 'recordTurnEnd' },
        onError: {
          // An error escaping the turn chart is a defect, reported as a typed failure rather than a hang.
          // No public input reaches it (the turn catches its tool calls' crashes), so it is the one
          // transition the generated paths never take (test/paths/chart-paths.test.ts).
          target: 'finishing',
          actions: 'recordTurnCrash',
        },
      },
      // RL-3: a run with a time limit is cancelled when it passes it, and ends `timed_out`.
      initial: 'deadline',
      states: {
        deadline: {
          always: [{ guard: 'hasRunTimeout', target: 'within_deadline' }, { target: 'no_deadline' }],
        },
        within_deadline: {
          after: { runTimeout: { target: 'past_deadline', actions: 'timeOutTurn' } },
        },
        no_deadline: {},
        past_deadline: {},
      },
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: { type: 'replyReloadRequired', params: theCommand } },
          { guard: 'isDuplicateRequest', actions: { type: 'replyDuplicate', params: theCommand } },
          { guard: 'policyEnqueues', actions: [{ type: 'enqueue', params: theCommand }, 'storeQueuedTurn', 'emitQueueUpdated'] },
          { guard: 'policyInterrupts', actions: ['dropQueue', { type: 'enqueue', params: theCommand }, 'storeQueuedTurn', 'emitQueueUpdated', 'cancelTurn'] },
          { actions: { type: 'replyBusy', params: theCommand } },
        ],
        'session.cancel_turn': [
          { guard: 'isActiveTurn', actions: ['cancelTurn', 'storeCancelRequest', { type: 'replyOk', params: theCommand }] },
          { guard: 'isQueuedTurn', actions: [{ type: 'dequeue', params: theCommand }, { type: 'settleCancelledQueuedTurn', params: ({ event }) => ({ turnId: event.turnId }) }, 'emitQueueUpdated'] },
          { actions: { type: 'replyTurnNotActive', params: theCommand } },
        ],
        'session.resolve_permission': [
          {
            guard: 'isPendingPermission',
            actions: ['forwardPermissionAnswer', { type: 'storeApprovalAnswer', params: answerParams }, { type: 'replyOk', params: theCommand }],
          },
          // Issue 26: the resumed turn has not asked again yet: the answer waits for it, stored.
          {
            guard: 'isAwaitedApproval',
            actions: ['holdAnswer', { type: 'storeApprovalAnswer', params: answerParams }, { type: 'replyOk', params: theCommand }],
          },
          { guard: 'isActiveTurn', actions: { type: 'replyPermissionNotPending', params: theCommand } },
          { actions: { type: 'replyTurnNotActive', params: theCommand } },
        ],
        'session.stop': { actions: ['markStopping', 'stopTurn', { type: 'replyOk', params: theCommand }] },
        // Issue 26: the turn is left as storage has it, for the next opening to go on with; its effects stop here.
        'session.park': [
          { guard: 'turnResumes', target: 'closing', actions: ['markStopping', 'abandonTurnEffects', { type: 'replyOk', params: theCommand }] },
          { actions: ['markStopping', 'stopTurn', { type: 'replyOk', params: theCommand }] },
        ],
        'turn.permission_requested': [
          // Issue 26: answered already (while no host held the session, or before the call asked again): it goes straight on.
          { guard: 'hasHeldAnswer', actions: ['recordPermissionRequest', { type: 'emitPermissionRequested', params: requestParams }, 'forwardHeldAnswer', 'dropHeldAnswer'] },
          { actions: ['recordPermissionRequest', { type: 'emitPermissionRequested', params: requestParams }, 'dropHeldAnswer'] },
        ],
        'turn.permission_settled': { actions: 'clearPermissionRequest' },
      },
    },
    /** A manual compaction, a rewind or a reload: the conversation is being replaced, so no turn may start. */
    maintaining: {
      entry: { type: 'requestEffect', params: ({ context }) => context.maintenance!.effect },
      on: {
        'effect.done': { target: 'idle', actions: 'replyMaintenanceDone' },
        'effect.failed': { target: 'idle', actions: 'replyMaintenanceFailed' },
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: { type: 'replyReloadRequired', params: theCommand } },
          { guard: 'isDuplicateRequest', actions: { type: 'replyDuplicate', params: theCommand } },
          { actions: { type: 'replySessionActive', params: theCommand } },
        ],
      },
    },
    finishing: {
      entry: {
        type: 'requestEffect',
        params: ({ context }) => ({
          name: 'finishTurn',
          input: { sessionId: context.sessionId, turnId: context.lastOutcome!.turnId, outcome: context.lastOutcome!.outcome, trackers: context.trackers },
        }),
      },
      on: {
        // Stored or not, the turn is over; a failed write is retried before the next turn's first write.
        // Unless the session is held elsewhere now: the new owner ends (or goes on with) the turn, and only
        // what storage has is announced, so this host says nothing and closes without writing (issue 26).
        'effect.done': [
          { guard: 'finishOwnedElsewhere', target: 'closing', actions: 'markStopping' },
          { target: 'idle', actions: ['recordFinish', 'clearActiveTurn', 'announceTurnFinished'] },
        ],
        'effect.failed': { target: 'idle', actions: ['clearActiveTurn', 'announceTurnFinished'] },
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: { type: 'replyReloadRequired', params: theCommand } },
          { guard: 'isDuplicateRequest', actions: { type: 'replyDuplicate', params: theCommand } },
          // The turn is over but not yet announced: a new one waits for it under either policy.
          { guard: 'policyEnqueues', actions: [{ type: 'enqueue', params: theCommand }, 'storeQueuedTurn', 'emitQueueUpdated'] },
          { guard: 'policyInterrupts', actions: ['dropQueue', { type: 'enqueue', params: theCommand }, 'storeQueuedTurn', 'emitQueueUpdated'] },
          { actions: { type: 'replyBusy', params: theCommand } },
        ],
      },
    },
    /**
     * The lease is given up with the session's last update sequence. Until that write is done the
     * runtime keeps the session, so a request that opens it again waits for it and numbers on
     * exactly; an opening that went first would take its own still-held lease for a crashed one's.
     */
    closing: {
      entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'closeSession', input: { sessionId: context.sessionId } }) },
      on: {
        'effect.done': 'closed',
        // The lease then runs out by itself: the next opening skips the numbers reserved, as after a crash.
        'effect.failed': 'closed',
      },
    },
    closed: { type: 'final' },
  },
});
