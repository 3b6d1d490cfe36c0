import { assign, fromCallback, sendTo, setup } from 'xstate';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { PermissionDecision } from '../src/protocol/updates.js';
import { turnMachine, type TurnLimits } from './turn.machine.js';
import { notProvided } from './not-provided.js';
import { EFFECT_PORT, requestEffectAction, type EffectCall, type EffectCancel, type EffectReply, type EffectRequest } from './effect-port.js';

/**
 * A session (000 §1–§2): the only place turns start. Commands arrive as events; the guards
 * decide (reload required → duplicate request → busy → accept) and the decision is left in
 * `context.reply` for the caller, so the chart — not the handle — owns the rules (XS-3).
 */

export interface SessionInput {
  sessionId: string;
  limits: TurnLimits;
  /** clientRequestId → turnId for turns already accepted (loaded from storage on open). */
  accepted: Record<string, string>;
  reloadRequired: boolean;
}

export type CommandReply =
  | { ok: true; turnId?: string; compactionId?: string }
  | { ok: false; error: { code: 'Busy'; turnId: string } }
  | { ok: false; error: { code: 'SessionActive' } }
  | { ok: false; error: { code: string; message: string } }
  | { ok: false; error: { code: 'ReloadRequired' } }
  | { ok: false; error: { code: 'TurnNotActive' } }
  | { ok: false; error: { code: 'PermissionNotPending' } };

export interface SessionContext extends SessionInput {
  activeTurn: { turnId: string; clientRequestId: string } | null;
  pendingPermission: { turnId: string; toolCallId: string } | null;
  lastOutcome: { turnId: string; outcome: TurnOutcome } | null;
  /** The answer to the last command, tagged with the command's id. */
  reply: { commandId: string; result: CommandReply } | null;
  /** A compaction, rewind or reload in progress, and the command waiting for its answer. */
  maintenance: { commandId: string; effect: EffectCall<SessionEffects> } | null;
}

export type SessionEvent =
  | { type: 'session.start_turn'; commandId: string; turnId: string; clientRequestId: string }
  | { type: 'session.cancel_turn'; commandId: string; turnId: string }
  | { type: 'session.resolve_permission'; commandId: string; turnId: string; toolCallId: string; decision: PermissionDecision }
  | { type: 'session.compact'; commandId: string }
  | { type: 'session.rewind'; commandId: string; compactionId: string }
  | { type: 'session.reload'; commandId: string }
  | { type: 'session.stop'; commandId: string }
  | { type: 'session.require_reload' }
  | { type: 'turn.permission_requested'; turnId: string; toolCallId: string; name: string; paths: string[] }
  | { type: 'turn.permission_settled'; turnId: string }
  | EffectReply;

export interface FinishTurnInput {
  sessionId: string;
  turnId: string;
  outcome: TurnOutcome;
}

/** The effects the session asks the runtime for. */
export type SessionEffects = {
  /** Stores the terminal status (a turn is over only once stored). */
  finishTurn: { input: FinishTurnInput; output: void };
  /** Manual compaction (RT-6, CP-3): summarize, store a checkpoint, install it. */
  compact: { input: { sessionId: string }; output: { compactionId: string } };
  /** Makes an earlier checkpoint the active one and installs it (CP-3). */
  rewindConversation: { input: { sessionId: string; compactionId: string }; output: void };
  /** Loads the conversation from storage again, the way out of `reloadRequired` (CP-4). */
  reloadConversation: { input: { sessionId: string }; output: void };
};

type Maintenance = Extract<SessionEvent, { type: 'session.compact' | 'session.rewind' | 'session.reload' }>;

function maintenanceEffect(sessionId: string, event: Maintenance): EffectCall<SessionEffects> {
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

export const sessionMachine = setup({
  types: {
    input: {} as SessionInput,
    context: {} as SessionContext,
    events: {} as SessionEvent,
  },
  actors: {
    turn: turnMachine,
    /** Runs every effect the session's charts request (see machines/effect-port.ts); supplied by the runtime. */
    effectPort: fromCallback<EffectRequest | EffectCancel>(notProvided('session', 'effectPort')),
  },
  guards: {
    isReloadRequired: ({ context }) => context.reloadRequired,
    isDuplicateRequest: ({ context, event }) =>
      event.type === 'session.start_turn' && Object.hasOwn(context.accepted, event.clientRequestId),
    isActiveTurn: ({ context, event }) => 'turnId' in event && context.activeTurn?.turnId === event.turnId,
    isPendingPermission: ({ context, event }) =>
      event.type === 'session.resolve_permission' &&
      context.pendingPermission?.turnId === event.turnId &&
      context.pendingPermission.toolCallId === event.toolCallId,
  },
  actions: {
    requestEffect: requestEffectAction<SessionContext, SessionEvent, SessionEffects>(),
    /** Emits `turn_started` once the turn is registered (RT-1). */
    emitTurnStarted: notProvided('session', 'emitTurnStarted') as (_: unknown, params: { turnId: string; clientRequestId: string }) => void,
    /** Emits `permission_requested` once the session can accept the answer (RT-16). */
    emitPermissionRequested: notProvided('session', 'emitPermissionRequested') as (
      _: unknown,
      params: { turnId: string; toolCallId: string; name: string; paths: string[] },
    ) => void,
    /** Emits `turn_finished` and releases waiters once the terminal status is stored. */
    announceTurnFinished: notProvided('session', 'announceTurnFinished'),
    clearActiveTurn: assign({ activeTurn: null, pendingPermission: null }),
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
      }),
    }),
    replySessionActive: assign({
      reply: ({ event }) => reply(event as Commanded, { ok: false, error: { code: 'SessionActive' } }),
    }),
    replyMaintenanceDone: assign({
      reply: ({ context, event }) => ({
        commandId: context.maintenance?.commandId ?? '',
        result: { ok: true, ...((event as Extract<EffectReply, { type: 'effect.done' }>).output as { compactionId?: string } | undefined) },
      }),
      reloadRequired: false,
      maintenance: null,
    }),
    replyMaintenanceFailed: assign({
      reply: ({ context, event }) => ({
        commandId: context.maintenance?.commandId ?? '',
        result: maintenanceFailure((event as Extract<EffectReply, { type: 'effect.failed' }>).error),
      }),
      reloadRequired: ({ context, event }) =>
        context.reloadRequired || ((event as Extract<EffectReply, { type: 'effect.failed' }>).error as { reloadRequired?: unknown } | null)?.reloadRequired === true,
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
    activeTurn: null,
    pendingPermission: null,
    lastOutcome: null,
    reply: null,
    maintenance: null,
  }),
  // One effect port serves the session, its turn and the turn's tool calls for the session's lifetime.
  invoke: { id: EFFECT_PORT, systemId: EFFECT_PORT, src: 'effectPort' },
  initial: 'idle',
  on: {
    'session.require_reload': { actions: assign({ reloadRequired: true }) },
    // Stopping with no turn running has nothing to stop; the answer tells the caller its request was seen.
    'session.stop': { actions: 'replyOk' },
    'session.cancel_turn': { actions: 'replyTurnNotActive' },
    'session.resolve_permission': { actions: 'replyTurnNotActive' },
    // RT-6: compaction, rewind and reload only while nothing else runs.
    'session.compact': { actions: 'replySessionActive' },
    'session.rewind': { actions: 'replySessionActive' },
    'session.reload': { actions: 'replySessionActive' },
  },
  states: {
    idle: {
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          {
            target: 'running',
            actions: [
              assign({
                activeTurn: ({ event }) => ({ turnId: event.turnId, clientRequestId: event.clientRequestId }),
                accepted: ({ context, event }) => ({ ...context.accepted, [event.clientRequestId]: event.turnId }),
                reply: ({ event }) => reply(event, { ok: true, turnId: event.turnId }),
              }),
              {
                type: 'emitTurnStarted',
                params: ({ event }) => ({ turnId: event.turnId, clientRequestId: event.clientRequestId }),
              },
            ],
          },
        ],
        'session.compact': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { target: 'maintaining', actions: 'beginMaintenance' },
        ],
        'session.rewind': { target: 'maintaining', actions: 'beginMaintenance' },
        'session.reload': { target: 'maintaining', actions: 'beginMaintenance' },
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
        }),
        onDone: {
          target: 'finishing',
          actions: assign({ lastOutcome: ({ context, event }) => ({ turnId: context.activeTurn!.turnId, outcome: event.output }) }),
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
      on: {
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          { actions: 'replyBusy' },
        ],
        'session.cancel_turn': [
          { guard: 'isActiveTurn', actions: [sendTo('turn', { type: 'turn.cancel' }), 'replyOk'] },
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
        'session.stop': { actions: [sendTo('turn', { type: 'turn.stop' }), 'replyOk'] },
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
          input: { sessionId: context.sessionId, turnId: context.lastOutcome!.turnId, outcome: context.lastOutcome!.outcome },
        }),
      },
      on: {
        // Stored or not, the turn is over; a failed write is retried before the next turn's first write.
        'effect.done': { target: 'idle', actions: ['clearActiveTurn', 'announceTurnFinished'] },
        'effect.failed': { target: 'idle', actions: ['clearActiveTurn', 'announceTurnFinished'] },
        'session.start_turn': [
          { guard: 'isReloadRequired', actions: 'replyReloadRequired' },
          { guard: 'isDuplicateRequest', actions: 'replyDuplicate' },
          { actions: 'replyBusy' },
        ],
      },
    },
  },
});
