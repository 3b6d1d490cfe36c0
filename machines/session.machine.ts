import { assign, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { PermissionDecision, QueuedTurnView } from '../src/protocol/updates.js';
import { turnMachine, type TurnLimits } from './turn.machine.js';
import type { GuardrailTrackers } from './guardrails.js';
import { notProvided } from './not-provided.js';
import { EFFECT_PORT, doneOutput, failedError, requestEffectAction, type EffectErrorTraits, type EffectAbort, type EffectCall, type EffectCancel, type EffectReply, type EffectRequest } from './effect-port.js';

/**
 * A session (000 §1–§2): the only place turns start. Commands arrive as events; the guards
 * decide (reload required → duplicate request → busy, by the session's busy policy → accept) and
 * the decision is left in `context.reply` for the caller, so the chart — not the handle — owns the
 * rules (XS-3). Turns that arrive while one runs are rejected, queued, or queued after cancelling
 * the running one (RL-2); a queued turn starts when the session would otherwise become idle.
 */

/** RL-2: `reject` answers Busy, `enqueue` runs turns one at a time in arrival order, `interrupt` cancels the running one. */
export type BusyPolicy = 'reject' | 'enqueue' | 'interrupt';

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
}

export type CommandReply =
  | { ok: true; turnId?: string; compactionId?: string; queued?: boolean }
  | { ok: false; error: { code: 'Busy'; turnId: string } }
  | { ok: false; error: { code: 'SessionActive' } }
  | { ok: false; error: { code: string; message: string } }
  | { ok: false; error: { code: 'ReloadRequired' } }
  | { ok: false; error: { code: 'TurnNotActive' } }
  | { ok: false; error: { code: 'PermissionNotPending' } };

export interface SessionContext extends SessionInput {
  activeTurn: QueuedTurnView | null;
  pendingPermission: { turnId: string; toolCallId: string } | null;
  lastOutcome: { turnId: string; outcome: TurnOutcome } | null;
  /** The answer to the last command, tagged with the command's id. */
  reply: { commandId: string; result: CommandReply } | null;
  /** A compaction, rewind, reload or agent switch in progress, and the command waiting for its answer; a switch brings its agent's limits. */
  maintenance: { commandId: string; effect: EffectCall<SessionEffects>; limits?: TurnLimits } | null;
  /** The session is being stopped: nothing more starts. */
  stopping: boolean;
}

export type SessionEvent =
  | { type: 'session.start_turn'; commandId: string; turnId: string; clientRequestId: string }
  | { type: 'session.cancel_turn'; commandId: string; turnId: string }
  | { type: 'session.resolve_permission'; commandId: string; turnId: string; toolCallId: string; decision: PermissionDecision }
  | { type: 'session.compact'; commandId: string }
  | { type: 'session.rewind'; commandId: string; compactionId: string }
  | { type: 'session.reload'; commandId: string }
  /** agent.switch: the session's agent (already checked against the allow-list) from the next turn on. */
  | { type: 'session.switch_agent'; commandId: string; agent: string; limits: TurnLimits }
  | { type: 'session.stop'; commandId: string }
  | { type: 'session.require_reload' }
  | { type: 'turn.permission_requested'; turnId: string; toolCallId: string; name: string; paths: string[] }
  | { type: 'turn.permission_settled'; turnId: string }
  | EffectReply;

/** What `finishTurn` reports: whether the turn's row was ever written (a turn that never was is forgotten). */
export interface FinishTurnOutput {
  stored: boolean;
}

export interface FinishTurnInput {
  sessionId: string;
  turnId: string;
  outcome: TurnOutcome;
  /** Stored with the terminal status: the next turn, after a restart too, starts from them (GR-2a). */
  trackers: GuardrailTrackers;
}

/** The effects the session asks the runtime for. */
export type SessionEffects = {
  /** Stores the terminal status (a turn is over only once stored). */
  finishTurn: { input: FinishTurnInput; output: FinishTurnOutput };
  /** Manual compaction (RT-6, CP-3): summarize, store a checkpoint, install it. */
  compact: { input: { sessionId: string }; output: { compactionId: string } };
  /** Makes an earlier checkpoint the active one and installs it (CP-3). */
  rewindConversation: { input: { sessionId: string; compactionId: string }; output: void };
  /** Loads the conversation from storage again, the way out of `reloadRequired` (CP-4). */
  reloadConversation: { input: { sessionId: string }; output: void };
  /** agent.switch: stores the new agent with a note in the conversation, and installs it for the next turn. */
  switchAgent: { input: { sessionId: string; agent: string }; output: void };
};

type Maintenance = Extract<SessionEvent, { type: 'session.compact' | 'session.rewind' | 'session.reload' | 'session.switch_agent' }>;

function maintenanceEffect(sessionId: string, event: Maintenance): EffectCall<SessionEffects> {
  if (event.type === 'session.switch_agent') return { name: 'switchAgent', input: { sessionId, agent: event.agent } };
  if (event.type === 'session.rewind') return { name: 'rewindConversation', input: { sessionId, compactionId: event.compactionId } };
  return event.type === 'session.compact' ? { name: 'compact', input: { sessionId } } : { name: 'reloadConversation', input: { sessionId } };
}

/** A failed compaction, rewind or reload as a command answer: the error's command code and message. */
function maintenanceFailure(error: unknown): CommandReply {
  const code = (error as { commandCode?: unknown } | null)?.commandCode;
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, error: { code: typeof code === 'string' ? code : 'CompactionFailed', message } };
}

type Commanded = Extract<SessionEvent, { commandId: string }>;

function reply(event: Commanded, result: CommandReply): SessionContext['reply'] {
  return { commandId: event.commandId, result };
}

type StartTurn = Extract<SessionEvent, { type: 'session.start_turn' }>;

function queuedTurn(event: StartTurn): QueuedTurnView {
  return { turnId: event.turnId, clientRequestId: event.clientRequestId };
}

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
    policyEnqueues: ({ context }) => context.busyPolicy === 'enqueue',
    policyInterrupts: ({ context }) => context.busyPolicy === 'interrupt',
    hasRunTimeout: ({ context }) => context.limits.runTimeoutMs !== null,
    isPendingPermission: ({ context, event }) =>
      event.type === 'session.resolve_permission' &&
      context.pendingPermission?.turnId === event.turnId &&
      context.pendingPermission.toolCallId === event.toolCallId,
  },
  actions: {
    requestEffect: requestEffectAction<SessionContext, SessionEvent, SessionEffects>(),
    /** Emits `turn_started` once the turn is the active one (RT-1). */
    emitTurnStarted: notProvided('session', 'emitTurnStarted'),
    /** Emits `permission_requested` once the session can accept the answer (RT-16). */
    emitPermissionRequested: notProvided('session', 'emitPermissionRequested') as (
      _: unknown,
      params: { turnId: string; toolCallId: string; name: string; paths: string[] },
    ) => void,
    /** Emits `turn_finished` and releases waiters once the terminal status is stored. */
    announceTurnFinished: notProvided('session', 'announceTurnFinished'),
    /** Stores the turn the `session.start_turn` event just queued, with its input and its run (the write the service acknowledges). */
    storeQueuedTurn: notProvided('session', 'storeQueuedTurn'),
    /** A queued turn cancelled before it started: it ends `cancelled` (stored, waiters told). */
    settleCancelledQueuedTurn: notProvided('session', 'settleCancelledQueuedTurn') as (_: unknown, params: { turnId: string }) => void,
    /** Announces the queue after it changed (`queue_updated`). */
    emitQueueUpdated: notProvided('session', 'emitQueueUpdated'),
    clearActiveTurn: assign({ activeTurn: null, pendingPermission: null }),
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
    enqueue: assign(({ context, event }) => {
      const e = event as StartTurn;
      return {
        queue: [...context.queue, queuedTurn(e)],
        accepted: { ...context.accepted, [e.clientRequestId]: e.turnId },
        reply: reply(e, { ok: true, turnId: e.turnId, queued: true }),
      };
    }),
    /** RL-2's interrupt: the new turn replaces any turn still waiting; those end `cancelled`. */
    enqueueReplacing: enqueueActions(({ context, enqueue: act }) => {
      for (const waiting of context.queue) act({ type: 'settleCancelledQueuedTurn', params: { turnId: waiting.turnId } });
      act.assign({ queue: [] });
      act('enqueue');
    }),
    markStopping: assign({ stopping: true }),
    /** Makes the head of the queue the active turn. */
    startQueuedTurn: assign({
      activeTurn: ({ context }) => context.queue[0] ?? null,
      queue: ({ context }) => context.queue.slice(1),
    }),
    dequeue: assign({
      queue: ({ context, event }) => context.queue.filter((q) => !('turnId' in event) || q.turnId !== event.turnId),
      reply: ({ event }) => reply(event as Commanded, { ok: true }),
    }),
    replyReloadRequired: assign({
      reply: ({ event }) => reply(event as Commanded, { ok: false, error: { code: 'ReloadRequired' } }),
    }),
    replyDuplicate: assign({
      reply: ({ context, event }) => {
        const e = event as Extract<SessionEvent, { type: 'session.start_turn' }>;
        return reply(e, { ok: true, turnId: context.accepted[e.clientRequestId] });
      },
    }),
    replyBusy: assign({
      reply: ({ context, event }) =>
        reply(event as Commanded, { ok: false, error: { code: 'Busy', turnId: context.activeTurn?.turnId ?? '' } }),
    }),
    replyOk: assign({ reply: ({ event }) => reply(event as Commanded, { ok: true }) }),
    replyTurnNotActive: assign({
      reply: ({ event }) => reply(event as Commanded, { ok: false, error: { code: 'TurnNotActive' } }),
    }),
    beginMaintenance: assign({
      maintenance: ({ context, event }) => ({
        commandId: (event as Maintenance).commandId,
        effect: maintenanceEffect(context.sessionId, event as Maintenance),
        ...(event.type === 'session.switch_agent' && { limits: event.limits }),
      }),
    }),
    replySessionActive: assign({
      reply: ({ event }) => reply(event as Commanded, { ok: false, error: { code: 'SessionActive' } }),
    }),
    replyMaintenanceDone: assign({
      reply: ({ context, event }) => ({
        commandId: context.maintenance?.commandId ?? '',
        result: { ok: true, ...doneOutput<{ compactionId?: string }>(event) },
      }),
      // A switched agent's limits apply from the next turn on: no turn runs while maintaining.
      limits: ({ context }) => context.maintenance?.limits ?? context.limits,
      reloadRequired: false,
      maintenance: null,
    }),
    replyMaintenanceFailed: assign({
      reply: ({ context, event }) => ({
        commandId: context.maintenance?.commandId ?? '',
        result: maintenanceFailure(failedError(event)),
      }),
      reloadRequired: ({ context, event }) =>
        context.reloadRequired || (failedError(event) as EffectErrorTraits)?.reloadRequired === true,
      maintenance: null,
    }),
    replyPermissionNotPending: assign({
      reply: ({ event }) => reply(event as Commanded, { ok: false, error: { code: 'PermissionNotPending' } }),
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
    'session.require_reload': { actions: assign({ reloadRequired: true }) },
    // Stopping with no turn running has nothing to stop; the answer tells the caller its request was seen.
    // Queued turns stay stored and queued: they start when the session is opened again.
    'session.stop': { actions: ['markStopping', 'replyOk'] },
    'session.cancel_turn': [
      { guard: 'isQueuedTurn', actions: ['dequeue', { type: 'settleCancelledQueuedTurn', params: ({ event }) => ({ turnId: event.turnId }) }, 'emitQueueUpdated'] },
      { actions: 'replyTurnNotActive' },
    ],
    'session.resolve_permission': { actions: 'replyTurnNotActive' },
    // RT-6: compaction, rewind and reload only while nothing else runs.
    'session.compact': { actions: 'replySessionActive' },
    'session.rewind': { actions: 'replySessionActive' },
    'session.reload': { actions: 'replySessionActive' },
    // agent.switch waits for the running turn to end, like compaction: the turn keeps the agent it started with.
    'session.switch_agent': { actions: 'replySessionActive' },
  },
  states: {
    idle: {
      // A queued turn starts as soon as nothing runs: after the turn before it, or when the session opens.
      always: { guard: 'startsQueuedTurn', target: 'running', actions: ['startQueuedTurn', 'emitTurnStarted', 'emitQueueUpdated'] },
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          {
            target: 'running',
            actions: [
              assign({
                activeTurn: ({ event }) => queuedTurn(event),
                accepted: ({ context, event }) => ({ ...context.accepted, [event.clientRequestId]: event.turnId }),
                reply: ({ event }) => reply(event, { ok: true, turnId: event.turnId }),
              }),
              'emitTurnStarted',
            ],
          },
        ],
        'session.compact': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { target: 'maintaining', actions: 'beginMaintenance' },
        ],
        'session.rewind': { target: 'maintaining', actions: 'beginMaintenance' },
        'session.reload': { target: 'maintaining', actions: 'beginMaintenance' },
        'session.switch_agent': { target: 'maintaining', actions: 'beginMaintenance' },
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
        }),
        onDone: {
          target: 'finishing',
          // The trackers come back with the outcome: the session keeps them for its next turn (GR-2a).
          actions: assign({
            lastOutcome: ({ context, event }) => ({ turnId: context.activeTurn!.turnId, outcome: event.output.outcome }),
            trackers: ({ event }) => event.output.trackers,
          }),
        },
        onError: {
          // An error escaping the turn chart is a defect, reported as a typed failure rather than a hang.
          // No public input reaches it (the turn catches its tool calls' crashes), so it is the one
          // transition the generated paths never take (test/paths/chart-paths.test.ts).
          target: 'finishing',
          actions: assign({
            lastOutcome: ({ context, event }) => ({
              turnId: context.activeTurn!.turnId,
              outcome: { status: 'failed', code: 'actor_stopped', message: `turn actor failed: ${String(event.error)}` },
            }),
          }),
        },
      },
      // RL-3: a run with a time limit is cancelled when it passes it, and ends `timed_out`.
      initial: 'deadline',
      states: {
        deadline: {
          always: [{ guard: 'hasRunTimeout', target: 'within_deadline' }, { target: 'no_deadline' }],
        },
        within_deadline: {
          after: { runTimeout: { target: 'past_deadline', actions: sendTo('turn', { type: 'turn.timeout' }) } },
        },
        no_deadline: {},
        past_deadline: {},
      },
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          { guard: 'policyEnqueues', actions: ['enqueue', 'storeQueuedTurn', 'emitQueueUpdated'] },
          { guard: 'policyInterrupts', actions: ['enqueueReplacing', 'storeQueuedTurn', 'emitQueueUpdated', sendTo('turn', { type: 'turn.cancel' })] },
          { actions: 'replyBusy' },
        ],
        'session.cancel_turn': [
          { guard: 'isActiveTurn', actions: [sendTo('turn', { type: 'turn.cancel' }), 'replyOk'] },
          { guard: 'isQueuedTurn', actions: ['dequeue', { type: 'settleCancelledQueuedTurn', params: ({ event }) => ({ turnId: event.turnId }) }, 'emitQueueUpdated'] },
          { actions: 'replyTurnNotActive' },
        ],
        'session.resolve_permission': [
          {
            guard: 'isPendingPermission',
            actions: [
              sendTo('turn', ({ event }) => ({
                type: 'turn.resolve_permission',
                toolCallId: event.toolCallId,
                decision: event.decision,
              })),
              'replyOk',
            ],
          },
          { guard: 'isActiveTurn', actions: 'replyPermissionNotPending' },
          { actions: 'replyTurnNotActive' },
        ],
        'session.stop': { actions: ['markStopping', sendTo('turn', { type: 'turn.stop' }), 'replyOk'] },
        'turn.permission_requested': {
          actions: [
            assign({ pendingPermission: ({ event }) => ({ turnId: event.turnId, toolCallId: event.toolCallId }) }),
            {
              type: 'emitPermissionRequested',
              params: ({ event }) => ({ turnId: event.turnId, toolCallId: event.toolCallId, name: event.name, paths: event.paths }),
            },
          ],
        },
        'turn.permission_settled': { actions: assign({ pendingPermission: null }) },
      },
    },
    /** A manual compaction, a rewind or a reload: the conversation is being replaced, so no turn may start. */
    maintaining: {
      entry: { type: 'requestEffect', params: ({ context }) => context.maintenance!.effect },
      on: {
        'effect.done': { target: 'idle', actions: 'replyMaintenanceDone' },
        'effect.failed': { target: 'idle', actions: 'replyMaintenanceFailed' },
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          { actions: 'replySessionActive' },
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
        'effect.done': { target: 'idle', actions: ['recordFinish', 'clearActiveTurn', 'announceTurnFinished'] },
        'effect.failed': { target: 'idle', actions: ['clearActiveTurn', 'announceTurnFinished'] },
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          // The turn is over but not yet announced: a new one waits for it under either policy.
          { guard: 'policyEnqueues', actions: ['enqueue', 'storeQueuedTurn', 'emitQueueUpdated'] },
          { guard: 'policyInterrupts', actions: ['enqueueReplacing', 'storeQueuedTurn', 'emitQueueUpdated'] },
          { actions: 'replyBusy' },
        ],
      },
    },
  },
});
