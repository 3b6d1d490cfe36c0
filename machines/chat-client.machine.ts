import { and, assign, enqueueActions, fromCallback, fromPromise, not, or, raise, setup, stateIn, type EventObject } from 'xstate';
import type { PermissionMode } from '../src/protocol/commands.js';
import type { PermissionDecision, TurnPhase, UpdateEnvelope } from '../src/protocol/updates.js';
import { notProvided } from './not-provided.js';
import { failureOf, outputOf } from './chat-client.effects.js';
import type { AcceptedTurn, ChatCommand, ChatFailure, ChatNotice, CommandResult, FeedEvent, FeedInput, OpenedSession, OpenSessionInput, RequestReply, ResolvePermissionInput, StartTurnInput, TurnRef } from './chat-client.effects.js';

/**
 * `turnchart chat`: the conversation with one session at a time, whatever the backend (a host over
 * HTTP, or a runtime in the chat's process). The chart decides; `src/cli/chat-controller.ts`
 * provides its effects — the backend calls, the session's feed, and `show`, which prints a notice
 * through the pure renderer (`src/cli/chat-render.ts`). The prompt and the spinner are read from
 * the chart's state after each step (`screenOf`), never set by hand.
 *
 *   opening ─► session ‖ link:  attaching → following (connecting → live ⇄ reconnecting) | none | ended
 *                      ‖ turn:  idle ⇄ running ⇄ asking
 *                      ‖ lines: waiting → deciding → starting_turn | answering | commanding | switching → waiting
 *           ─► ending ─► closed
 *
 * Lines are queued as they are entered and taken one at a time, each once the previous one's work is
 * done. From a terminal a line is taken at once (text typed while a turn runs is sent, and the host
 * answers by its busy policy); from a pipe the input is a script: a line waits until no turn runs or
 * the turn asks for an approval, and the end of the input (`input.ended`) waits for the running turn
 * and the lines still queued before the chat ends. Ctrl+C (`input.interrupted`) cancels the running
 * turn, or one being started once its id is known; when nothing runs it asks for a second one, and
 * two within a second always end the chat.
 */

/** Two Ctrl+C this close together end the chat, whatever runs. */
export const DOUBLE_INTERRUPT_MS = 1_000;

/** Every permission mode, for `/mode` to check its argument against (a mode added to the protocol fails to compile here until listed). */
const PERMISSION_MODES = { ask: true, auto: true, read_only: true } as const satisfies Record<PermissionMode, true>;

/** Codes of a refused cancel that say the turn is over, or that no answer will come: the turn is taken as ended. */
const CANCEL_ENDS_TURN = ['TurnNotActive', 'UnknownTurn', 'HostUnreachable', 'HostTimeout', 'SessionClosed', 'RuntimeStopped'];

/** Codes of a refused approval answer that say the approval is no longer pending. */
const ANSWER_NOT_PENDING = ['PermissionNotPending', 'TurnNotActive'];

export interface ChatClientInput {
  /** A host keeps running a turn after the chat leaves; an embedded runtime stops it. */
  backend: 'host' | 'embedded';
  /** Input from a terminal: lines are taken as typed, and its end (Ctrl+D) leaves at once. */
  interactive: boolean;
  /** The session to continue; null starts a new one. */
  sessionId: string | null;
  /** The permission mode of the sessions the chat creates; null leaves it to the backend. */
  newSessionMode: PermissionMode | null;
  /** The agent of the sessions the chat creates (`--agent`); null leaves it to the backend. `/new AGENT` picks another. */
  newSessionAgent?: string | null;
  /** This chat's client request ids start with it: a turn started with another one was started elsewhere. */
  requestPrefix: string;
}

interface Approval {
  turnId: string;
  toolCallId: string;
  name: string;
}

/** What a line taken at the prompt asks for. */
type LineAction =
  | { kind: 'none' }
  | { kind: 'say'; notice: ChatNotice }
  | { kind: 'leave' }
  | { kind: 'answer'; approval: Approval; decision: PermissionDecision }
  | { kind: 'start_turn'; text: string }
  | { kind: 'command'; command: ChatCommand }
  /** A stored session, or (null) a new one of `agent` (null: the chat's `--agent`). */
  | { kind: 'open_session'; sessionId: string | null; agent: string | null };

export interface ChatClientContext {
  backend: 'host' | 'embedded';
  interactive: boolean;
  newSessionMode: PermissionMode | null;
  newSessionAgent: string | null;
  requestPrefix: string;
  /** The session followed (while `opening`, the one asked for); null when none could be opened. */
  sessionId: string | null;
  mode: PermissionMode | null;
  /** The last update shown: a resumed feed may repeat some, which are dropped. */
  lastSequence: number;
  /** The turn running in the session, as far as the chat knows: set in `running` and `asking`. */
  turnId: string | null;
  phase: TurnPhase | null;
  /** The approval the turn waits for: set exactly in `asking`. */
  approval: Approval | null;
  /** The approval just answered, until the session confirms it (or refuses the answer: asked again). */
  answered: Approval | null;
  /** Turns seen ending, newest last: a start answered after its turn already ended must not look running. */
  endedTurnIds: string[];
  /** Lines entered and not taken yet. */
  lines: string[];
  /** False once the input ended. */
  inputOpen: boolean;
  /** What the line being taken asks for. */
  line: LineAction;
  /** Turns this chat asked to start: the next client request id's number. */
  turnsStarted: number;
  /** Ctrl+C came while a turn was being started: it is cancelled as soon as its id is known. */
  cancelOnStart: boolean;
  lastInterruptAtMs: number | null;
  /** Ctrl+C came when nothing ran: another one ends the chat. */
  exitArmed: boolean;
}

/** What the input says: a line entered, Ctrl+C (when it came), its end (Ctrl+D, or a script's end); and a request to leave. */
export type InputEvent =
  | { type: 'input.line_entered'; line: string }
  | { type: 'input.interrupted'; atMs: number }
  | { type: 'input.ended' }
  /** Asked to stop (SIGTERM, a closed terminal): leave as `/exit` does. */
  | { type: 'chat.leave' };

/**
 * Raised by the chart for its `turn` region: what the updates and the line work tell about the
 * turn. Raised rather than sent, so that the regions that care take one in the same step.
 */
type TurnFact =
  | { type: 'turn.started'; turnId: string }
  | { type: 'turn.phase_changed'; phase: TurnPhase }
  | { type: 'turn.finished'; turnId: string }
  | { type: 'approval.requested'; turnId: string; toolCallId: string; name: string }
  | { type: 'approval.resolved'; toolCallId: string }
  /** A line answered the approval. */
  | { type: 'approval.answered' }
  /** The backend refused that answer. */
  | { type: 'approval.answer_refused'; error: ChatFailure }
  /** The backend answered a start: running now, or queued. */
  | { type: 'turn.accepted'; turnId: string; status: string };

export type ChatClientEvent = InputEvent | FeedEvent | RequestReply | TurnFact;

/** What a line asks for, given where the chat is. */
function readLine(line: string, context: ChatClientContext): LineAction {
  const text = line.trim();
  if (context.approval && !text.startsWith('/')) {
    const decision: PermissionDecision | null = /^(a|allow|allow once|y|yes)$/i.test(text) ? 'allow_once' : /^(d|deny|n|no)$/i.test(text) ? 'deny' : null;
    return decision ? { kind: 'answer', approval: context.approval, decision } : { kind: 'say', notice: { kind: 'bad_answer' } };
  }
  if (text.startsWith('/')) return readCommand(text, context);
  if (text === '') return { kind: 'none' };
  if (!context.sessionId) return { kind: 'say', notice: { kind: 'no_session' } };
  return { kind: 'start_turn', text };
}

function readCommand(text: string, context: ChatClientContext): LineAction {
  const [name = '', ...args] = text.slice(1).split(/\s+/);
  const say = (notice: ChatNotice): LineAction => ({ kind: 'say', notice });
  const { sessionId } = context;
  switch (name) {
    case 'exit':
    case 'quit':
      return { kind: 'leave' };
    case 'help':
      return say({ kind: 'help' });
    case 'sessions':
      return { kind: 'command', command: { kind: 'list_sessions' } };
    case 'agents':
      return { kind: 'command', command: { kind: 'list_agents' } };
    case 'new':
    case 'open':
      if (context.turnId) return say({ kind: 'busy' });
      if (name === 'open' && !args[0]) return say({ kind: 'usage', usage: '/open SESSION_ID' });
      return name === 'open' ? { kind: 'open_session', sessionId: args[0]!, agent: null } : { kind: 'open_session', sessionId: null, agent: args[0] ?? null };
    case 'mode': {
      if (!sessionId) return say({ kind: 'no_session' });
      const mode = args[0];
      if (mode === undefined) return say({ kind: 'mode', mode: context.mode });
      if (!Object.hasOwn(PERMISSION_MODES, mode)) return say({ kind: 'usage', usage: `/mode ${Object.keys(PERMISSION_MODES).join('|')}` });
      return { kind: 'command', command: { kind: 'set_mode', sessionId, mode: mode as PermissionMode } };
    }
    case 'compact':
      return sessionId ? { kind: 'command', command: { kind: 'compact', sessionId } } : say({ kind: 'no_session' });
    case 'context':
      return sessionId ? { kind: 'command', command: { kind: 'read_context', sessionId } } : say({ kind: 'no_session' });
    default:
      return say({ kind: 'unknown_command', name });
  }
}

/** The line being taken, when it asks for `kind`. */
function lineOf<K extends LineAction['kind']>(context: ChatClientContext, kind: K): Extract<LineAction, { kind: K }> {
  if (context.line.kind !== kind) throw new Error(`chat client machine: the line asks for ${context.line.kind}, not ${kind}`);
  return context.line as Extract<LineAction, { kind: K }>;
}

/** The turn's fact an update tells, raised for the `turn` region; null when it tells none. */
function turnFactOf(envelope: UpdateEnvelope): TurnFact | null {
  const { update, turnId } = envelope;
  switch (update.type) {
    case 'turn_started':
      return { type: 'turn.started', turnId };
    case 'phase_changed':
      return { type: 'turn.phase_changed', phase: update.phase };
    case 'permission_requested':
      return { type: 'approval.requested', turnId, toolCallId: update.toolCallId, name: update.name };
    case 'permission_resolved':
      return { type: 'approval.resolved', toolCallId: update.toolCallId };
    case 'turn_finished':
      return { type: 'turn.finished', turnId };
    default:
      return null;
  }
}

/** Keeps the last few: only a start answered late needs them. */
const ENDED_KEPT = 16;

function withEnded(ended: string[], turnId: string): string[] {
  return ended.includes(turnId) ? ended : [...ended.slice(-(ENDED_KEPT - 1)), turnId];
}

const ATTACHING = '#chat.active.session.link.attaching';
const CONNECTING = '#chat.active.session.link.following.connecting';
const STARTING_TURN = '#chat.active.session.lines.starting_turn';
const WAITING_FOR_LINE = '#chat.active.session.lines.waiting';

/**
 * The chat chart, unprovided: `src/cli/chat-controller.ts` supplies the actors (the backend, the
 * feed) and the actions `show`, `requestCancel`, `requestTurnStatus` (machines/chat-client.effects.ts).
 * Every guard and action is named in `setup`.
 */
export const chatClientMachine = setup({
  types: {
    input: {} as ChatClientInput,
    context: {} as ChatClientContext,
    events: {} as ChatClientEvent,
  },
  actors: {
    /** Creates a session (`sessionId` null) or opens a stored one. */
    openSession: fromPromise<OpenedSession, OpenSessionInput>(notProvided('chat client', 'openSession')),
    /** Follows the session: reports `FeedEvent`s in order until stopped. */
    feed: fromCallback<EventObject, FeedInput>(notProvided('chat client', 'feed')),
    startTurn: fromPromise<AcceptedTurn, StartTurnInput>(notProvided('chat client', 'startTurn')),
    resolvePermission: fromPromise<void, ResolvePermissionInput>(notProvided('chat client', 'resolvePermission')),
    runCommand: fromPromise<CommandResult, ChatCommand>(notProvided('chat client', 'runCommand')),
    /** Closes the backend: a host's turn goes on, an embedded runtime stops its running turn. */
    closeClient: fromPromise<void, void>(notProvided('chat client', 'closeClient')),
  },
  guards: {
    interactive: ({ context }) => context.interactive,
    hasSession: ({ context }) => context.sessionId !== null,
    hasLineQueued: ({ context }) => context.lines.length > 0,
    /** No turn runs, or it waits for an approval: where a script's next line may be taken. */
    turnSettled: ({ context }) => context.turnId === null || context.approval !== null,
    turnActive: ({ context }) => context.turnId !== null,
    approvalPending: ({ context }) => context.approval !== null,
    inputOpen: ({ context }) => context.inputOpen,
    /**
     * The first snapshot has not come yet. `attaching` counts: its eventless step and the lines'
     * are chosen together, so a line queued before the session opened would otherwise start a turn
     * before the feed is even asked for, and that feed's first (idle) snapshot would then end it.
     */
    connecting: or([stateIn(ATTACHING), stateIn(CONNECTING)]),
    startingTurn: stateIn(STARTING_TURN),
    waitingForLine: stateIn(WAITING_FOR_LINE),
    lineAsks: ({ context }, params: { kind: LineAction['kind'] }) => context.line.kind === params.kind,
    sendsWhileTurnRuns: ({ context }) => context.line.kind === 'start_turn' && context.turnId !== null,
    exitArmed: ({ context }) => context.exitArmed,
    quickSecondInterrupt: ({ context, event }) =>
      event.type === 'input.interrupted' && context.lastInterruptAtMs !== null && event.atMs - context.lastInterruptAtMs < DOUBLE_INTERRUPT_MS,
    cancelOnStart: ({ context }) => context.cancelOnStart,
    isStaleUpdate: ({ context, event }) => event.type === 'feed.update_received' && event.envelope.sequence <= context.lastSequence,
    isCurrentTurn: ({ context, event }) => event.type === 'turn.finished' && event.turnId === context.turnId,
    resolvesPendingApproval: ({ context, event }) => event.type === 'approval.resolved' && event.toolCallId === context.approval?.toolCallId,
    resolvesAnsweredApproval: ({ context, event }) => event.type === 'approval.resolved' && event.toolCallId === context.answered?.toolCallId,
    snapshotShowsTurn: ({ event }) => event.type === 'feed.snapshot_received' && event.snapshot.runtime.kind === 'running',
    snapshotShowsApproval: ({ event }) =>
      event.type === 'feed.snapshot_received' && event.snapshot.runtime.kind === 'running' && event.snapshot.runtime.pendingApproval !== null,
    /** The start was answered with a running turn that has not already been seen ending. */
    startRunsTurn: ({ context, event }) => event.type === 'turn.accepted' && event.status !== 'queued' && !context.endedTurnIds.includes(event.turnId),
    /** A refused answer to an approval that is still pending: it is asked again. */
    answerStillPending: ({ context, event }) =>
      event.type === 'approval.answer_refused' && context.answered !== null && context.answered.turnId === context.turnId && !ANSWER_NOT_PENDING.includes(event.error.code),
    /** A refused cancel of the current turn that says it is over (or that the backend cannot be asked). */
    cancelEndsTurn: ({ context, event }) => event.type === 'cancel.refused' && event.turnId === context.turnId && CANCEL_ENDS_TURN.includes(event.error.code),
  },
  actions: {
    /** Prints a notice (through the pure renderer). */
    show: notProvided<[unknown, ChatNotice]>('chat client', 'show'),
    /** Asks the backend to cancel a turn; answers `cancel.refused` if it refuses. */
    requestCancel: notProvided<[unknown, TurnRef]>('chat client', 'requestCancel'),
    /** Asks how a turn that ended unseen ended; answers `turn_status.received` or `turn_status.failed`. */
    requestTurnStatus: notProvided<[unknown, TurnRef]>('chat client', 'requestTurnStatus'),

    queueLine: assign({ lines: ({ context, event }) => (event.type === 'input.line_entered' ? [...context.lines, event.line] : context.lines) }),
    closeInput: assign({ inputOpen: false }),
    /** Takes the next line: what it asks for is decided against the chat as it is now. */
    takeLine: assign(({ context }) => {
      const [line = '', ...rest] = context.lines;
      return { lines: rest, line: readLine(line, context), exitArmed: false };
    }),
    noteInterrupt: assign({ lastInterruptAtMs: ({ event }) => (event.type === 'input.interrupted' ? event.atMs : null) }),
    noteInterruptWhileStarting: assign({ lastInterruptAtMs: ({ event }) => (event.type === 'input.interrupted' ? event.atMs : null), cancelOnStart: true }),
    noteInterruptArmingExit: assign({ lastInterruptAtMs: ({ event }) => (event.type === 'input.interrupted' ? event.atMs : null), exitArmed: true }),
    countTurn: assign({ turnsStarted: ({ context }) => context.turnsStarted + 1, cancelOnStart: false }),
    /** Follows the session just opened (`openSession`'s output), from a clean slate. */
    useSession: assign(({ event }) => {
      const session = outputOf<OpenedSession>(event);
      return {
        sessionId: session.sessionId,
        mode: session.permissionMode,
        lastSequence: -1,
        turnId: null,
        phase: null,
        approval: null,
        answered: null,
        endedTurnIds: [],
        cancelOnStart: false,
      };
    }),
    forgetSession: assign({ sessionId: null, mode: null }),
    recordSequence: assign({ lastSequence: ({ context, event }) => (event.type === 'feed.update_received' ? event.envelope.sequence : context.lastSequence) }),
    /** A turn runs: the one `turn_started` names, or the one a start was answered with. */
    takeTurn: assign(({ context, event }) => ({
      turnId: event.type === 'turn.started' || event.type === 'turn.accepted' ? event.turnId : context.turnId,
      phase: 'starting' as TurnPhase,
      approval: null,
      answered: null,
    })),
    setPhase: assign({ phase: ({ context, event }) => (event.type === 'turn.phase_changed' ? event.phase : context.phase) }),
    takeApproval: assign(({ context, event }) => {
      if (event.type !== 'approval.requested') return {};
      return { turnId: context.turnId ?? event.turnId, approval: { turnId: event.turnId, toolCallId: event.toolCallId, name: event.name } };
    }),
    /** The approval was answered here: the turn runs on while the answer travels. */
    answerApproval: assign(({ context }) => ({ answered: context.approval, approval: null })),
    dropApproval: assign({ approval: null }),
    forgetAnswer: assign({ answered: null }),
    restoreApproval: assign(({ context }) => ({ approval: context.answered, answered: null })),
    /** The current turn is over (its `turn_finished`, or known without it). */
    endTurn: assign(({ context }) => ({
      endedTurnIds: context.turnId ? withEnded(context.endedTurnIds, context.turnId) : context.endedTurnIds,
      turnId: null,
      phase: null,
      approval: null,
      answered: null,
    })),
    recordEnded: assign({ endedTurnIds: ({ context, event }) => (event.type === 'turn.finished' ? withEnded(context.endedTurnIds, event.turnId) : context.endedTurnIds) }),
    adoptMode: assign({
      mode: ({ context, event }) => {
        const result = outputOf<CommandResult>(event);
        return result.kind === 'mode_set' ? result.mode : context.mode;
      },
    }),
    /** Raises what an update tells about the turn, for the `turn` region. */
    raiseTurnFact: enqueueActions(({ event, enqueue }) => {
      const fact = event.type === 'feed.update_received' ? turnFactOf(event.envelope) : null;
      if (fact) enqueue.raise(fact);
    }),
    raiseAccepted: raise(({ event }) => {
      const accepted = outputOf<AcceptedTurn>(event);
      return { type: 'turn.accepted' as const, turnId: accepted.turnId, status: accepted.status };
    }),
    raiseAnswered: raise({ type: 'approval.answered' }),
    raiseAnswerRefused: raise(({ event }) => ({ type: 'approval.answer_refused' as const, error: failureOf((event as { error?: unknown }).error) })),
    /** A snapshot: on the first connection, or when a resume could not replay what was missed. */
    reconcileSnapshot: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'feed.snapshot_received') return;
      const { snapshot, resumed } = event;
      const view = snapshot.runtime.kind === 'running' ? snapshot.runtime : null;
      const pending = view?.pendingApproval ?? null;
      const previous = context.turnId;
      let endedTurnIds = context.endedTurnIds;
      if (resumed) enqueue({ type: 'show', params: { kind: 'caught_up' } });
      if (previous !== null && previous !== view?.turnId) {
        // It ended while its updates were not seen: its outcome is asked for.
        enqueue({ type: 'requestTurnStatus', params: { sessionId: context.sessionId!, turnId: previous } });
        endedTurnIds = withEnded(endedTurnIds, previous);
      }
      if (view && previous !== view.turnId) enqueue({ type: 'show', params: { kind: 'turn_running', turnId: view.turnId, phase: view.phase } });
      if (view && pending && context.approval?.toolCallId !== pending.toolCallId) {
        enqueue({ type: 'show', params: { kind: 'approval_needed', name: pending.name, paths: pending.paths } });
      }
      enqueue.assign({
        lastSequence: snapshot.lastUpdateSequence,
        mode: snapshot.permissionMode,
        turnId: view?.turnId ?? null,
        phase: view?.phase ?? null,
        approval: view && pending ? { turnId: view.turnId, toolCallId: pending.toolCallId, name: pending.name } : null,
        answered: view && !pending && context.answered?.turnId === view.turnId ? context.answered : null,
        endedTurnIds,
      });
    }),
    /** The backend accepted a turn: said when it waits behind another. */
    announceAccepted: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'turn.accepted' && event.status === 'queued') enqueue({ type: 'show', params: { kind: 'turn_queued', turnId: event.turnId } });
    }),
    announceCommand: enqueueActions(({ context, enqueue }) => {
      if (context.line.kind === 'command' && context.line.command.kind === 'compact') enqueue({ type: 'show', params: { kind: 'compacting' } });
    }),
    /** Leaving while a turn runs: a host's goes on, an embedded one ends when the chat does. */
    announceLeaving: enqueueActions(({ context, enqueue }) => {
      if (context.turnId) enqueue({ type: 'show', params: { kind: 'leaving_turn', turnId: context.turnId, backend: context.backend } });
    }),
    announceTurnStatus: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'turn_status.received' && event.outcome) enqueue({ type: 'show', params: { kind: 'outcome', outcome: event.outcome } });
    }),
  },
}).createMachine({
  id: 'chat',
  context: ({ input }) => ({
    backend: input.backend,
    interactive: input.interactive,
    newSessionMode: input.newSessionMode,
    newSessionAgent: input.newSessionAgent ?? null,
    requestPrefix: input.requestPrefix,
    sessionId: input.sessionId,
    mode: null,
    lastSequence: -1,
    turnId: null,
    phase: null,
    approval: null,
    answered: null,
    endedTurnIds: [],
    lines: [],
    inputOpen: true,
    line: { kind: 'none' },
    turnsStarted: 0,
    cancelOnStart: false,
    lastInterruptAtMs: null,
    exitArmed: false,
  }),
  initial: 'active',
  states: {
    active: {
      initial: 'opening',
      on: {
        'input.line_entered': { actions: 'queueLine' },
        // A terminal's Ctrl+D leaves at once; a script's end waits for its lines and its turn (`session`'s `always`).
        'input.ended': [{ guard: 'interactive', target: 'ending' }, { actions: 'closeInput' }],
        'chat.leave': { target: 'ending' },
        'input.interrupted': [
          { guard: 'quickSecondInterrupt', target: 'ending' },
          { guard: 'startingTurn', actions: ['noteInterruptWhileStarting', { type: 'show', params: { kind: 'cancelling' } }] },
          {
            guard: and(['turnActive', 'hasSession']),
            actions: [
              'noteInterrupt',
              { type: 'show', params: { kind: 'cancelling' } },
              { type: 'requestCancel', params: ({ context }) => ({ sessionId: context.sessionId!, turnId: context.turnId! }) },
            ],
          },
          { guard: 'exitArmed', target: 'ending' },
          { actions: ['noteInterruptArmingExit', { type: 'show', params: { kind: 'exit_hint' } }] },
        ],
        'turn_status.received': { actions: 'announceTurnStatus' },
        'turn_status.failed': { actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: event.error }) } },
      },
      states: {
        opening: {
          invoke: {
            id: 'openSession',
            src: 'openSession',
            input: ({ context }) => ({ sessionId: context.sessionId, permissionMode: context.newSessionMode, agent: context.newSessionAgent }),
            onDone: {
              target: 'session',
              actions: [
                'useSession',
                { type: 'show', params: ({ event }) => ({ kind: 'session_opened', sessionId: event.output.sessionId, created: event.output.created, mode: event.output.permissionMode, agent: event.output.agent }) },
              ],
            },
            // The chat goes on without a session: /new starts one, /open ID continues one.
            onError: { target: 'session', actions: [{ type: 'show', params: ({ event }) => ({ kind: 'error', error: failureOf(event.error) }) }, 'forgetSession'] },
          },
        },
        session: {
          type: 'parallel',
          // The end of a script: every line taken, and no turn running — or one waiting for an approval nobody will give.
          always: [
            {
              guard: and([not('inputOpen'), not('hasLineQueued'), 'waitingForLine', not('connecting'), 'approvalPending']),
              target: '#chat.ending',
              actions: { type: 'show', params: { kind: 'input_ended_at_approval' } },
            },
            { guard: and([not('inputOpen'), not('hasLineQueued'), 'waitingForLine', not('connecting'), not('turnActive')]), target: '#chat.ending' },
          ],
          on: {
            // Shown here, then raised as the turn's fact for the `turn` region (no region takes the update itself).
            'feed.update_received': [
              { guard: 'isStaleUpdate' },
              {
                actions: [
                  'recordSequence',
                  {
                    type: 'show',
                    params: ({ context, event }) => ({
                      kind: 'update',
                      envelope: event.envelope,
                      call: event.call,
                      startedElsewhere: event.envelope.update.type === 'turn_started' && !event.envelope.update.clientRequestId.startsWith(`${context.requestPrefix}-`),
                    }),
                  },
                  'raiseTurnFact',
                ],
              },
            ],
          },
          states: {
            link: {
              initial: 'attaching',
              states: {
                attaching: {
                  always: [{ guard: 'hasSession', target: 'following' }, { target: 'none' }],
                },
                /** No session to follow. */
                none: {},
                following: {
                  invoke: { id: 'feed', src: 'feed', input: ({ context }) => ({ sessionId: context.sessionId! }) },
                  initial: 'connecting',
                  on: {
                    'feed.ended': { target: 'ended', actions: { type: 'show', params: ({ event }) => ({ kind: 'feed_ended', error: event.error }) } },
                  },
                  states: {
                    /** Until the first snapshot: no line is taken meanwhile. */
                    connecting: {
                      on: {
                        'feed.snapshot_received': { target: 'live' },
                        'feed.connection_lost': { target: 'reconnecting', actions: { type: 'show', params: ({ event }) => ({ kind: 'connection_lost', error: event.error }) } },
                      },
                    },
                    live: {
                      on: {
                        'feed.connection_lost': { target: 'reconnecting', actions: { type: 'show', params: ({ event }) => ({ kind: 'connection_lost', error: event.error }) } },
                      },
                    },
                    /** The feed retries by itself; lines are still taken, and what they ask of the backend fails there, one line each. */
                    reconnecting: {
                      on: {
                        'feed.connection_restored': { target: 'live', actions: { type: 'show', params: { kind: 'connection_restored' } } },
                        'feed.snapshot_received': { target: 'live' },
                      },
                    },
                  },
                },
                /** The feed stopped for good (the backend refused it, or the session closed). */
                ended: {},
              },
            },
            turn: {
              initial: 'idle',
              on: {
                // A snapshot says where the turn is; a turn the chat thought running that is gone ended unseen.
                'feed.snapshot_received': [
                  { guard: 'snapshotShowsApproval', target: '.asking', actions: 'reconcileSnapshot' },
                  { guard: 'snapshotShowsTurn', target: '.running', actions: 'reconcileSnapshot' },
                  { target: '.idle', actions: 'reconcileSnapshot' },
                ],
                'cancel.refused': [
                  { guard: 'cancelEndsTurn', target: '.idle', actions: [{ type: 'show', params: ({ event }) => ({ kind: 'error', error: event.error }) }, 'endTurn'] },
                  { actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: event.error }) } },
                ],
              },
              states: {
                idle: {
                  on: {
                    'turn.started': { target: 'running', actions: 'takeTurn' },
                    // Answered before the turn's `turn_started` arrived (a host's stream may lag its answer).
                    'turn.accepted': { guard: 'startRunsTurn', target: 'running', actions: 'takeTurn' },
                    'approval.requested': { target: 'asking', actions: 'takeApproval' },
                    'turn.finished': { actions: 'recordEnded' },
                  },
                },
                running: {
                  on: {
                    'turn.started': { actions: 'takeTurn' },
                    'turn.phase_changed': { actions: 'setPhase' },
                    'approval.requested': { target: 'asking', actions: 'takeApproval' },
                    'approval.resolved': { guard: 'resolvesAnsweredApproval', actions: 'forgetAnswer' },
                    'approval.answer_refused': [{ guard: 'answerStillPending', target: 'asking', actions: 'restoreApproval' }, { actions: 'forgetAnswer' }],
                    'turn.finished': [{ guard: 'isCurrentTurn', target: 'idle', actions: 'endTurn' }, { actions: 'recordEnded' }],
                    'feed.ended': { target: 'idle', actions: 'endTurn' },
                  },
                },
                asking: {
                  on: {
                    'turn.started': { target: 'running', actions: 'takeTurn' },
                    'turn.phase_changed': { actions: 'setPhase' },
                    'approval.requested': { actions: 'takeApproval' },
                    'approval.resolved': { guard: 'resolvesPendingApproval', target: 'running', actions: 'dropApproval' },
                    'approval.answered': { target: 'running', actions: 'answerApproval' },
                    'turn.finished': [{ guard: 'isCurrentTurn', target: 'idle', actions: 'endTurn' }, { actions: 'recordEnded' }],
                    'feed.ended': { target: 'idle', actions: 'endTurn' },
                  },
                },
              },
            },
            lines: {
              initial: 'waiting',
              states: {
                waiting: {
                  always: {
                    guard: and(['hasLineQueued', or(['interactive', 'turnSettled']), not('connecting')]),
                    target: 'deciding',
                    actions: [
                      {
                        type: 'show',
                        params: ({ context }) => ({ kind: 'line_taken', line: context.lines[0] ?? '', atApproval: context.approval !== null, typed: context.interactive }),
                      },
                      'takeLine',
                    ],
                  },
                },
                deciding: {
                  always: [
                    { guard: { type: 'lineAsks', params: { kind: 'leave' } }, target: '#chat.ending' },
                    { guard: { type: 'lineAsks', params: { kind: 'answer' } }, target: 'answering', actions: 'raiseAnswered' },
                    { guard: 'sendsWhileTurnRuns', target: 'starting_turn', actions: [{ type: 'show', params: { kind: 'sent_while_running' } }, 'countTurn'] },
                    { guard: { type: 'lineAsks', params: { kind: 'start_turn' } }, target: 'starting_turn', actions: 'countTurn' },
                    { guard: { type: 'lineAsks', params: { kind: 'command' } }, target: 'commanding' },
                    { guard: { type: 'lineAsks', params: { kind: 'open_session' } }, target: 'switching' },
                    { guard: { type: 'lineAsks', params: { kind: 'say' } }, target: 'waiting', actions: { type: 'show', params: ({ context }) => lineOf(context, 'say').notice } },
                    { target: 'waiting' },
                  ],
                },
                starting_turn: {
                  invoke: {
                    id: 'startTurn',
                    src: 'startTurn',
                    input: ({ context }) => ({
                      sessionId: context.sessionId!,
                      text: lineOf(context, 'start_turn').text,
                      clientRequestId: `${context.requestPrefix}-${context.turnsStarted}`,
                    }),
                    // Raised, so the `turn` region takes the answer in the same step as this region: a script's next line must see the turn running.
                    onDone: { actions: 'raiseAccepted' },
                    onError: { target: 'waiting', actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: failureOf(event.error) }) } },
                  },
                  on: {
                    'turn.accepted': [
                      {
                        guard: 'cancelOnStart',
                        target: 'waiting',
                        actions: ['announceAccepted', { type: 'requestCancel', params: ({ context, event }) => ({ sessionId: context.sessionId!, turnId: event.turnId }) }],
                      },
                      { target: 'waiting', actions: 'announceAccepted' },
                    ],
                  },
                },
                answering: {
                  invoke: {
                    id: 'resolvePermission',
                    src: 'resolvePermission',
                    input: ({ context }) => {
                      const { approval, decision } = lineOf(context, 'answer');
                      return { sessionId: context.sessionId!, turnId: approval.turnId, toolCallId: approval.toolCallId, decision };
                    },
                    onDone: { target: 'waiting' },
                    onError: { actions: 'raiseAnswerRefused' },
                  },
                  on: {
                    'approval.answer_refused': { target: 'waiting', actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: event.error }) } },
                  },
                },
                commanding: {
                  entry: 'announceCommand',
                  invoke: {
                    id: 'runCommand',
                    src: 'runCommand',
                    input: ({ context }) => lineOf(context, 'command').command,
                    onDone: {
                      target: 'waiting',
                      actions: ['adoptMode', { type: 'show', params: ({ context, event }) => ({ kind: 'command_done', result: event.output, sessionId: context.sessionId }) }],
                    },
                    onError: { target: 'waiting', actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: failureOf(event.error) }) } },
                  },
                },
                /** `/new` or `/open ID`: the session is replaced only once the other one is open. */
                switching: {
                  invoke: {
                    id: 'switchSession',
                    src: 'openSession',
                    input: ({ context }) => {
                      const line = lineOf(context, 'open_session');
                      return { sessionId: line.sessionId, permissionMode: context.newSessionMode, agent: line.agent ?? context.newSessionAgent };
                    },
                    onDone: {
                      target: '#chat.active.session',
                      reenter: true,
                      actions: [
                        'useSession',
                        {
                          type: 'show',
                          params: ({ event }) => ({ kind: 'session_opened', sessionId: event.output.sessionId, created: event.output.created, mode: event.output.permissionMode, agent: event.output.agent }),
                        },
                      ],
                    },
                    onError: { target: 'waiting', actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: failureOf(event.error) }) } },
                  },
                },
              },
            },
          },
        },
      },
    },
    ending: {
      entry: 'announceLeaving',
      invoke: {
        id: 'closeClient',
        src: 'closeClient',
        onDone: { target: 'closed' },
        onError: { target: 'closed', actions: { type: 'show', params: ({ event }) => ({ kind: 'error', error: failureOf(event.error) }) } },
      },
    },
    closed: { type: 'final' },
  },
});
