import { assign, emit, enqueueActions, fromEventObservable, not, raise, setup, type EventObject } from 'xstate';
import type { EmbedSessionInput, InputPart, PermissionMode, TriggerType } from '../src/protocol/commands.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { PermissionDecision, UpdateEnvelope } from '../src/protocol/updates.js';
import { notProvided } from './not-provided.js';

/**
 * A session as a child of a host's own machine (issue 11). The host invokes or spawns this chart
 * and talks to it in the session's vocabulary: commands named like the session chart's events,
 * each answered with a `reply`, every update envelope emitted as it is issued, and — when the host
 * opts in — typed `turnchart.*` events sent to the parent. The session itself stays in its runtime
 * (which owns its storage, lease and update sequence); the runtime supplies the bridge to it.
 */

/** What the host sends. Payloads are those of `SessionHandle`'s commands and are validated there. */
export type SessionCommand =
  | { type: 'session.start_turn'; clientRequestId: string; input: InputPart[]; trigger?: TriggerType }
  | { type: 'session.cancel_turn'; turnId: string }
  | { type: 'session.resolve_permission'; turnId: string; toolCallId: string; decision: PermissionDecision }
  | { type: 'session.set_mode'; mode: PermissionMode }
  | { type: 'session.deliver_agent_message'; from: string; text: string }
  | { type: 'session.compact' }
  | { type: 'session.rewind'; compactionId: string }
  | { type: 'session.reload' };

/** A command's answer: the value the matching `SessionHandle` method returns. */
export type CommandAnswer = { ok: true; [key: string]: unknown } | { ok: false; error: { code: string; [key: string]: unknown } };

/** A tool call waiting for approval, with the arguments the model gave it. */
export interface PermissionRequest {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  paths: string[];
}

/**
 * Marks the events the runtime's bridge sends, so an event a host sends with a `bridge.*` type is
 * answered as an unknown command instead of being taken for the session's word.
 */
export const FROM_BRIDGE: unique symbol = Symbol('turnchart.bridge');

/**
 * What the runtime's bridge tells the chart. Each event it sends carries `[FROM_BRIDGE]: true`,
 * written in the object literal (a property added afterwards would cost a shape change per update).
 */
export type BridgeEvent =
  | { type: 'bridge.opened'; sessionId: string }
  | { type: 'bridge.update'; envelope: UpdateEnvelope }
  | { type: 'bridge.permission_requested'; envelope: UpdateEnvelope; request: PermissionRequest }
  | { type: 'bridge.reply'; command: EventObject; result: CommandAnswer };

/** Sent to the parent when the input says `notifyParent: true`. */
export type TurnchartParentEvent =
  | { type: 'turnchart.session_opened'; sessionId: string }
  | { type: 'turnchart.turn_started'; sessionId: string; turnId: string; clientRequestId: string }
  | ({ type: 'turnchart.permission_requested' } & PermissionRequest)
  | { type: 'turnchart.turn_finished'; sessionId: string; turnId: string; outcome: TurnOutcome }
  | { type: 'turnchart.command_failed'; sessionId: string | null; command: string; error: { code: string; [key: string]: unknown } };

/** Heard with `actor.on(type, …)`. */
export type EmbeddedSessionEmitted =
  | { type: 'opened'; sessionId: string }
  | { type: 'update'; envelope: UpdateEnvelope }
  | { type: 'reply'; command: EventObject; result: CommandAnswer };

export type EmbeddedSessionInput = EmbedSessionInput;

export interface EmbeddedSessionContext {
  input: EmbeddedSessionInput;
  /** Known once the session is open (a new session's id is made by the runtime). */
  sessionId: string | null;
  notifyParent: boolean;
  /** Commands that arrived while the session was opening, run in order once it is open. */
  deferred: EventObject[];
}

export interface EmbeddedSessionOutput {
  sessionId: string | null;
}

function updateOf(event: EventObject): UpdateEnvelope['update'] | undefined {
  return (event as Partial<Extract<BridgeEvent, { type: 'bridge.update' }>>).envelope?.update;
}

/** Whether the input asks for parent events; input a host typed wrongly reads as no. */
function wantsParentEvents(input: unknown): boolean {
  try {
    return (input as { notifyParent?: unknown } | null | undefined)?.notifyParent === true;
  } catch {
    return false;
  }
}

type ChartEvent = SessionCommand | BridgeEvent;

/** Sends a typed event to the parent, when the input opted in and there is a parent. */
const notifyParent = enqueueActions<EmbeddedSessionContext, ChartEvent, TurnchartParentEvent>(({ context, self, enqueue }, event) => {
  if (context.notifyParent && self._parent) enqueue.sendParent(event);
  // Typed as its signature: setup cannot infer an enqueueActions that takes params.
}) as unknown as (_: unknown, event: TurnchartParentEvent) => void;

/**
 * The embedded session chart, unprovided: name it in a host's `setup({ actors })` and plug in
 * `runtime.sessionLogic` with `.provide()`. Of its implementations a host may replace the guards
 * `allowsAutomatically` / `deniesAutomatically` (its approval policy) and the action `notifyParent`;
 * `sessionBridge` and `runCommand` are the runtime's (persistence, sequencing, ownership) and
 * `runtime.sessionLogic.provide()` always puts them back.
 */
export const embeddedSessionMachine = setup({
  types: {
    input: {} as EmbeddedSessionInput,
    context: {} as EmbeddedSessionContext,
    events: {} as ChartEvent,
    emitted: {} as EmbeddedSessionEmitted,
    output: {} as EmbeddedSessionOutput,
  },
  actors: {
    /**
     * Opens the session, then carries its updates; completes when the session closes, errors when
     * it cannot be opened, and closes the session when stopped. Supplied by the runtime; not replaceable.
     */
    sessionBridge: fromEventObservable<BridgeEvent, EmbeddedSessionInput>(notProvided('embedded session', 'sessionBridge')),
  },
  guards: {
    /** The host's approval policy: allow this request without asking anyone. Never, unless provided. */
    allowsAutomatically: (_: unknown, _request: PermissionRequest) => false,
    /** The host's approval policy: deny this request without asking anyone. Never, unless provided. */
    deniesAutomatically: (_: unknown, _request: PermissionRequest) => false,
    isTurnStarted: ({ event }) => updateOf(event)?.type === 'turn_started',
    isTurnFinished: ({ event }) => updateOf(event)?.type === 'turn_finished',
    /** An answer that is an error. */
    isRefusal: ({ event }) => event.type === 'bridge.reply' && !event.result.ok,
    isFromBridge: ({ event }) => (event as { [FROM_BRIDGE]?: true })[FROM_BRIDGE] === true,
    /** Anything but XState's own events (an actor error must stay an error). */
    isForeignEvent: ({ event }) => !event.type.startsWith('xstate.'),
  },
  actions: {
    /** Runs one command on the session and answers it with `bridge.reply`. Supplied by the runtime; not replaceable. */
    runCommand: notProvided<[unknown, EventObject]>('embedded session', 'runCommand'),
    /** Where typed notifications go: the parent, when the input opted in and there is one. */
    notifyParent: notifyParent,
    emitUpdate: emit(({ event }) => ({ type: 'update' as const, envelope: (event as Extract<BridgeEvent, { envelope: unknown }>).envelope })),
    emitReply: emit(({ event }) => {
      const reply = event as Extract<BridgeEvent, { type: 'bridge.reply' }>;
      return { type: 'reply' as const, command: reply.command, result: reply.result };
    }),
    /** An event this chart does not know is answered like a bad command, never dropped silently. */
    replyUnknown: raise(
      ({ event }) =>
        ({
          type: 'bridge.reply',
          command: event,
          result: { ok: false, error: { code: 'UnknownCommand', message: `no command '${event.type}'` } },
          [FROM_BRIDGE]: true,
        }) as BridgeEvent,
    ),
  },
}).createMachine({
  id: 'embeddedSession',
  context: ({ input }) => ({ input, sessionId: null, notifyParent: wantsParentEvents(input), deferred: [] }),
  invoke: {
    id: 'bridge',
    src: 'sessionBridge',
    input: ({ context }) => context.input,
    // The session closed under the host (its runtime shut down, another owner took it).
    onDone: '.closed',
    // No onError: a session that cannot be opened is this actor's error, heard by the host's `onError`.
  },
  initial: 'opening',
  on: {
    'bridge.update': [
      { guard: not('isFromBridge'), actions: 'replyUnknown' },
      {
        guard: 'isTurnStarted',
        actions: [
          'emitUpdate',
          {
            type: 'notifyParent',
            params: ({ context, event }) => ({
              type: 'turnchart.turn_started',
              sessionId: context.sessionId ?? event.envelope.sessionId,
              turnId: event.envelope.turnId,
              clientRequestId: (event.envelope.update as { clientRequestId: string }).clientRequestId,
            }),
          },
        ],
      },
      {
        guard: 'isTurnFinished',
        actions: [
          'emitUpdate',
          {
            type: 'notifyParent',
            params: ({ event }) => ({
              type: 'turnchart.turn_finished',
              sessionId: event.envelope.sessionId,
              turnId: event.envelope.turnId,
              outcome: (event.envelope.update as { outcome: TurnOutcome }).outcome,
            }),
          },
        ],
      },
      { actions: 'emitUpdate' },
    ],
    // The host's policy answers first; what it leaves open goes to the parent.
    'bridge.permission_requested': [
      { guard: not('isFromBridge'), actions: 'replyUnknown' },
      {
        guard: { type: 'allowsAutomatically', params: ({ event }) => event.request },
        actions: ['emitUpdate', { type: 'runCommand', params: ({ event }) => decide(event.request, 'allow_once') }],
      },
      {
        guard: { type: 'deniesAutomatically', params: ({ event }) => event.request },
        actions: ['emitUpdate', { type: 'runCommand', params: ({ event }) => decide(event.request, 'deny') }],
      },
      {
        actions: ['emitUpdate', { type: 'notifyParent', params: ({ event }) => ({ type: 'turnchart.permission_requested', ...event.request }) }],
      },
    ],
    'bridge.reply': [
      { guard: not('isFromBridge'), actions: 'replyUnknown' },
      {
        guard: 'isRefusal',
        actions: [
          'emitReply',
          {
            type: 'notifyParent',
            params: ({ context, event }) => ({
              type: 'turnchart.command_failed',
              sessionId: context.sessionId,
              command: event.command.type,
              error: (event.result as Extract<CommandAnswer, { ok: false }>).error,
            }),
          },
        ],
      },
      { actions: 'emitReply' },
    ],
    '*': { guard: 'isForeignEvent', actions: 'replyUnknown' },
  },
  states: {
    opening: {
      on: {
        'session.*': { actions: assign({ deferred: ({ context, event }) => [...context.deferred, event] }) },
        'bridge.opened': [
          { guard: not('isFromBridge'), actions: 'replyUnknown' },
          {
            target: 'open',
            actions: [
              assign({ sessionId: ({ event }) => event.sessionId }),
              emit(({ event }) => ({ type: 'opened' as const, sessionId: event.sessionId })),
              { type: 'notifyParent', params: ({ event }) => ({ type: 'turnchart.session_opened', sessionId: event.sessionId }) },
              enqueueActions(({ context, enqueue }) => {
                for (const command of context.deferred) enqueue({ type: 'runCommand', params: command });
                enqueue.assign({ deferred: [] });
              }),
            ],
          },
        ],
      },
    },
    open: {
      on: {
        'session.*': { actions: { type: 'runCommand', params: ({ event }) => event } },
      },
    },
    closed: {
      type: 'final',
    },
  },
  output: ({ context }) => ({ sessionId: context.sessionId }),
});

function decide(request: PermissionRequest, decision: PermissionDecision): SessionCommand {
  return { type: 'session.resolve_permission', turnId: request.turnId, toolCallId: request.toolCallId, decision };
}
