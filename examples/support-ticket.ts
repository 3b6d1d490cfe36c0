import { assign, sendTo, setup } from 'xstate';
import { embeddedSessionMachine, type PermissionDecision, type PermissionRequest, type TurnOutcome, type TurnchartParentEvent } from 'turnchart';

/** A support ticket worked by an agent, with a human answering whatever needs approval. */
type TicketEvent = { type: 'ASSIGN_TO_AGENT' } | { type: 'HUMAN_APPROVED' } | { type: 'HUMAN_DENIED' } | { type: 'CUSTOMER_WITHDREW' } | TurnchartParentEvent;

const answer = (request: PermissionRequest, decision: PermissionDecision) => ({
  type: 'session.resolve_permission' as const,
  turnId: request.turnId,
  toolCallId: request.toolCallId,
  decision,
});

export const ticketMachine = setup({
  types: {
    input: {} as { ticketId: string; question: string },
    context: {} as { ticketId: string; question: string; turnId: string | null; pending: PermissionRequest | null; outcome: TurnOutcome | null; error: unknown },
    events: {} as TicketEvent,
    output: {} as { outcome: TurnOutcome | null; error: unknown },
  },
  // The pure chart stands in for the session; `.provide({ actors: { agent: runtime.sessionLogic } })` plugs in a runtime.
  actors: { agent: embeddedSessionMachine },
}).createMachine({
  id: 'ticket',
  context: ({ input }) => ({ ...input, turnId: null, pending: null, outcome: null, error: null }),
  initial: 'triage',
  states: {
    triage: {
      on: { ASSIGN_TO_AGENT: 'handling' },
    },
    handling: {
      // The session lives while the ticket is handled: leaving this state closes it (a running turn ends actor_stopped).
      invoke: {
        id: 'agent',
        src: 'agent',
        input: { permissionMode: 'ask', notifyParent: true },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => event.error }) },
        onDone: 'failed',
      },
      entry: sendTo('agent', ({ context }) => ({
        type: 'session.start_turn' as const,
        clientRequestId: `ticket-${context.ticketId}`,
        input: [{ type: 'text' as const, text: context.question }],
      })),
      on: {
        'turnchart.turn_started': { actions: assign({ turnId: ({ event }) => event.turnId }) },
        'turnchart.turn_finished': { target: 'resolved', actions: assign({ outcome: ({ event }) => event.outcome }) },
        CUSTOMER_WITHDREW: {
          guard: ({ context }) => context.turnId !== null,
          actions: sendTo('agent', ({ context }) => ({ type: 'session.cancel_turn' as const, turnId: context.turnId! })),
        },
      },
      initial: 'agent_working',
      states: {
        agent_working: {
          on: { 'turnchart.permission_requested': { target: 'awaiting_human', actions: assign({ pending: ({ event }) => event }) } },
        },
        awaiting_human: {
          on: {
            HUMAN_APPROVED: { target: 'agent_working', actions: sendTo('agent', ({ context }) => answer(context.pending!, 'allow_once')) },
            HUMAN_DENIED: { target: 'agent_working', actions: sendTo('agent', ({ context }) => answer(context.pending!, 'deny')) },
          },
        },
      },
    },
    resolved: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }) => ({ outcome: context.outcome, error: context.error }),
});
