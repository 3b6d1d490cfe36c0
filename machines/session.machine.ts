import { assign, enqueueActions, fromCallback, sendTo, setup, type DoneActorEvent, type ErrorActorEvent, type EventObject } from 'xstate';
import type { BusyPolicy } from '../src/protocol/commands.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { PermissionDecision, QueuedTurnView } from '../src/protocol/updates.js';
import { turnMachine, type TurnEvent, type TurnInterrupt, type TurnLimits, type TurnOutput } from './turn.machine.js';
import type { FinishTurnOutput, PermissionRequestParams, QueuedTurnParams, SessionEffects } from './session.effects.js';
import type { GuardrailTrackers } from './guardrails.js';
import { notProvided } from './not-provided.js';
import { EFFECT_PORT, doneOutput, failedError, requestEffectAction, type EffectErrorTraits, type EffectAbort, type EffectCall, type EffectCancel, type EffectReply, type EffectRequest } from './effect-port.js';
import { messageOf } from '../src/util/errors.js';

/**
 * A session (000 §1–§2): the only place turns start. Commands arrive as events; the guards
 * decide (reload required → duplicate request → busy, by the session's busy policy → accept) and
 * the decision is left in `context.reply` for the caller, so the chart — not the handle — owns the
 * rules (XS-3). Turns that arrive while one runs are rejected, queued, or queued after cancelling
 * the running one (RL-2); a queued turn starts when the session would otherwise become idle.
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

type Maintenance = Extract<SessionEvent, { type: 'session.compact' | 'session.rewind' | 'session.reload' | 'session.switch_agent' }>;

function maintenanceEffect(sessionId: string, event: Maintenance): EffectCall<SessionEffects> {
  if (event.type === 'session.switch_agent') return { name: 'switchAgent', input: { sessionId, agent: event.agent } };
  if (event.type === 'session.rewind') return { name: 'rewindConversation', input: { sessionId, compactionId: event.compactionId } };
  return event.type === 'session.compact' ? { name: 'compact', input: { sessionId } } : { name: 'reloadConversation', input: { sessionId } };
}

/** A failed compaction, rewind or reload as a command answer: the error's command code and message. */
function maintenanceFailure(error: unknown): CommandReply {
  const code = (error as { commandCode?: unknown } | null)?.commandCode;
  const message = messageOf(error);
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

// The turn's events and its end, read on the transitions that take them.
const permissionRequestOf = (event: SessionEvent) => event as Extract<SessionEvent, { type: 'turn.permission_requested' }>;
const permissionAnswerOf = (event: SessionEvent) => event as Extract<SessionEvent, { type: 'session.resolve_permission' }>;
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
      return { type: 'turn.resolve_permission', toolCallId: answer.toolCallId, decision: answer.decision } satisfies TurnEvent;
    }),
    markReloadRequired: assign({ reloadRequired: true }),
    /** The turn of a `session.start_turn` starts at once: it is the active turn, its request is accepted and answered. */
    acceptTurn: assign(({ context, event }) => {
      const e = event as StartTurn;
      return {
        activeTurn: queuedTurn(e),
        accepted: { ...context.accepted, [e.clientRequestId]: e.turnId },
        reply: reply(e, { ok: true, turnId: e.turnId }),
      };
    }),
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
    'session.require_reload': { actions: 'markReloadRequired' },
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
          { target: 'running', actions: ['acceptTurn', 'emitTurnStarted'] },
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
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          { guard: 'policyEnqueues', actions: ['enqueue', 'storeQueuedTurn', 'emitQueueUpdated'] },
          { guard: 'policyInterrupts', actions: ['enqueueReplacing', 'storeQueuedTurn', 'emitQueueUpdated', 'cancelTurn'] },
          { actions: 'replyBusy' },
        ],
        'session.cancel_turn': [
          { guard: 'isActiveTurn', actions: ['cancelTurn', 'replyOk'] },
          { guard: 'isQueuedTurn', actions: ['dequeue', { type: 'settleCancelledQueuedTurn', params: ({ event }) => ({ turnId: event.turnId }) }, 'emitQueueUpdated'] },
          { actions: 'replyTurnNotActive' },
        ],
        'session.resolve_permission': [
          {
            guard: 'isPendingPermission',
            actions: ['forwardPermissionAnswer', 'replyOk'],
          },
          { guard: 'isActiveTurn', actions: 'replyPermissionNotPending' },
          { actions: 'replyTurnNotActive' },
        ],
        'session.stop': { actions: ['markStopping', 'stopTurn', 'replyOk'] },
        'turn.permission_requested': {
          actions: [
            'recordPermissionRequest',
            {
              type: 'emitPermissionRequested',
              params: ({ event }) => ({ turnId: event.turnId, toolCallId: event.toolCallId, name: event.name, paths: event.paths }),
            },
          ],
        },
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
