import { createActor, fromCallback, fromPromise, type EventObject } from 'xstate';
import { describe, expect, it } from 'vitest';
import type {
  AcceptedTurn,
  ChatCommand,
  ChatNotice,
  CommandResult,
  OpenedSession,
  OpenSessionInput,
  ResolvePermissionInput,
  StartTurnInput,
  TurnRef,
} from '../../machines/chat-client.effects.js';
import { chatClientMachine, DOUBLE_INTERRUPT_MS, type ChatClientInput } from '../../machines/chat-client.machine.js';
import type { SessionSnapshot } from '../../src/protocol/session-snapshot.js';
import { UPDATE_VERSION, type SessionUpdate, type UpdateEnvelope } from '../../src/protocol/updates.js';
import { APPROVAL_PROMPT, INPUT_PROMPT, screenOf } from '../../src/cli/chat-render.js';

/** A backend call the test answers by hand. */
interface Call {
  actor: string;
  input: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const PREFIX = 'chat-test';

/**
 * The chat chart on a stub client: each backend call waits until the test answers it, the feed is
 * the test sending `feed.*` events, and the notices, cancels and status requests are recorded.
 */
function chat(input: Partial<ChatClientInput> = {}) {
  const calls: Call[] = [];
  const notices: ChatNotice[] = [];
  const cancels: TurnRef[] = [];
  const statusRequests: TurnRef[] = [];
  const feeds: { sessionId: string; stopped: boolean }[] = [];
  const pending = <Output, Input>(actor: string) =>
    fromPromise<Output, Input>(({ input: given }) => new Promise<Output>((resolve, reject) => calls.push({ actor, input: given, resolve: resolve as (value: unknown) => void, reject })));
  const machine = chatClientMachine.provide({
    actors: {
      openSession: pending<OpenedSession, OpenSessionInput>('openSession'),
      feed: fromCallback<EventObject, { sessionId: string }>(({ input: given }) => {
        const feed = { sessionId: given.sessionId, stopped: false };
        feeds.push(feed);
        return () => (feed.stopped = true);
      }),
      startTurn: pending<AcceptedTurn, StartTurnInput>('startTurn'),
      resolvePermission: pending<void, ResolvePermissionInput>('resolvePermission'),
      runCommand: pending<CommandResult, ChatCommand>('runCommand'),
      closeClient: pending<void, void>('closeClient'),
    },
    actions: {
      show: (_, notice: ChatNotice) => notices.push(notice),
      requestCancel: (_, ref: TurnRef) => cancels.push(ref),
      requestTurnStatus: (_, ref: TurnRef) => statusRequests.push(ref),
    },
  });
  const actor = createActor(machine, { input: { backend: 'host', interactive: false, sessionId: null, newSessionMode: null, requestPrefix: PREFIX, ...input } });
  actor.start();
  let sequence = 0;
  let noticesSeen = 0;

  /** The oldest unanswered call to `actor`. */
  const callTo = (name: string): Call => {
    const found = calls.find((c) => c.actor === name);
    if (!found) throw new Error(`no call to ${name} (calls: ${calls.map((c) => c.actor).join(', ') || 'none'})`);
    return found;
  };
  const settle = async (call: Call, how: () => void) => {
    calls.splice(calls.indexOf(call), 1);
    how();
    // The chart takes the promise actor's answer on the following microtasks.
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };

  const self = {
    actor,
    notices,
    cancels,
    statusRequests,
    feeds,
    calls,
    /** The state as a compact string per region. */
    state(): string {
      const snapshot = actor.getSnapshot();
      if (snapshot.status === 'done') return 'closed';
      if (snapshot.matches('ending')) return 'ending';
      if (snapshot.matches({ active: 'opening' })) return 'opening';
      const { session } = (snapshot.value as { active: { session: { link: unknown; turn: string; lines: string } } }).active;
      const link = typeof session.link === 'string' ? session.link : `following.${(session.link as { following: string }).following}`;
      return `link:${link} turn:${session.turn} lines:${session.lines}`;
    },
    screen: () => screenOf(actor.getSnapshot()),
    /** The notices printed since the last call. */
    newNotices(): ChatNotice[] {
      const fresh = notices.slice(noticesSeen);
      noticesSeen = notices.length;
      return fresh;
    },
    callTo,
    answer: (name: string, value?: unknown) => {
      const call = callTo(name);
      return settle(call, () => call.resolve(value));
    },
    refuse: (name: string, code: string, message = code) => {
      const call = callTo(name);
      return settle(call, () => call.reject({ code, message }));
    },
    /** Opens (or creates) the session and delivers its first snapshot. */
    async open(sessionId = 'ses_1', snapshot: Partial<SessionSnapshot> = {}) {
      await self.answer('openSession', { sessionId, permissionMode: 'ask', created: true });
      actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf(sessionId, snapshot), resumed: false });
    },
    line: (line: string) => actor.send({ type: 'input.line_entered', line }),
    update(turnId: string, update: SessionUpdate) {
      sequence += 1;
      const envelope: UpdateEnvelope = { version: UPDATE_VERSION, sessionId: 'ses_1', turnId, sequence, occurredAtMs: 0, update };
      actor.send({ type: 'feed.update_received', envelope, call: null });
      return envelope;
    },
    /** A turn started by this chat: its `turn_started` with one of its request ids. */
    turnStarted: (turnId: string, clientRequestId = `${PREFIX}-1`) => self.update(turnId, { type: 'turn_started', clientRequestId }),
    finished: (turnId: string) => self.update(turnId, { type: 'turn_finished', outcome: { status: 'completed', finalText: 'done' } }),
    asks: (turnId: string, toolCallId = 'call_1') => self.update(turnId, { type: 'permission_requested', toolCallId, name: 'write_file', paths: ['a.md'] }),
  };
  return self;
}

function snapshotOf(sessionId: string, overrides: Partial<SessionSnapshot> = {}): SessionSnapshot {
  return { version: 8, sessionId, lastUpdateSequence: 0, permissionMode: 'ask', busyPolicy: 'reject', queue: [], sandbox: { kind: 'none', reason: null }, runtime: { kind: 'idle' }, ...overrides };
}

function running(turnId: string, pendingApproval: { toolCallId: string; name: string; paths: string[] } | null = null): SessionSnapshot['runtime'] {
  return { kind: 'running', turnId, clientRequestId: 'elsewhere', phase: pendingApproval ? 'waiting_permission' : 'running_model', draftText: '', draftReasoning: '', toolCalls: [], pendingApproval, plan: null };
}

describe('the chat chart', () => {
  it('opens the session, waits for the first snapshot, then prompts', async () => {
    const c = chat({ newSessionMode: 'auto' });
    expect(c.state()).toBe('opening');
    expect(c.callTo('openSession').input).toEqual({ sessionId: null, permissionMode: 'auto', agent: null });
    expect(c.screen()).toEqual({ prompt: null, spinner: null });
    await c.answer('openSession', { sessionId: 'ses_1', permissionMode: 'auto', created: true });
    expect(c.state()).toBe('link:following.connecting turn:idle lines:waiting');
    expect(c.feeds).toEqual([{ sessionId: 'ses_1', stopped: false }]);
    // No prompt, and no line taken, before the first snapshot.
    c.line('hello');
    expect(c.screen().prompt).toBeNull();
    expect(c.calls).toEqual([]);
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_1', { permissionMode: 'auto' }), resumed: false });
    expect(c.state()).toBe('link:following.live turn:idle lines:starting_turn');
    expect(c.notices.slice(0, 2)).toEqual([
      { kind: 'session_opened', sessionId: 'ses_1', created: true, mode: 'auto' },
      { kind: 'line_taken', line: 'hello', atApproval: false, typed: false },
    ]);
  });

  it('holds a script\'s lines that came before the session opened until the feed\'s first snapshot', async () => {
    // A piped script's lines are all read before the host answers the session's creation.
    const c = chat();
    c.line('hello there');
    c.line('/context');
    await c.answer('openSession', { sessionId: 'ses_1', permissionMode: 'ask', created: true });
    expect(c.state()).toBe('link:following.connecting turn:idle lines:waiting');
    expect(c.calls).toEqual([]);
    // The first snapshot predates the turn: taken before it, it would end the turn at once.
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_1'), resumed: false });
    expect(c.callTo('startTurn').input).toMatchObject({ text: 'hello there' });
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    c.turnStarted('turn_1');
    expect(c.calls).toEqual([]);
    expect(c.statusRequests).toEqual([]);
    c.finished('turn_1');
    expect(c.callTo('runCommand').input).toEqual({ kind: 'read_context', sessionId: 'ses_1' });
  });

  it('goes on without a session when none can be opened: lines that need one say so', async () => {
    const c = chat({ sessionId: 'ses_gone' });
    expect(c.callTo('openSession').input).toEqual({ sessionId: 'ses_gone', permissionMode: null, agent: null });
    await c.refuse('openSession', 'UnknownSession', "no session 'ses_gone'");
    expect(c.state()).toBe('link:none turn:idle lines:waiting');
    expect(c.screen()).toEqual({ prompt: INPUT_PROMPT, spinner: null });
    c.newNotices();
    c.line('hello');
    c.line('/context');
    expect(c.newNotices().filter((n) => n.kind === 'no_session')).toHaveLength(2);
    expect(c.calls).toEqual([]);
  });

  it('runs a turn: starting, running with its phases, idle again; a script takes the next line only then', async () => {
    const c = chat();
    await c.open();
    c.line('hello');
    c.line('/context');
    expect(c.state()).toBe('link:following.live turn:idle lines:starting_turn');
    expect(c.callTo('startTurn').input).toEqual({ sessionId: 'ses_1', text: 'hello', clientRequestId: `${PREFIX}-1` });
    expect(c.screen()).toEqual({ prompt: null, spinner: 'starting…' });
    // The start answered before the stream's `turn_started` (a host's stream may lag): the turn runs already.
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    expect(c.calls).toEqual([]);
    c.turnStarted('turn_1');
    c.update('turn_1', { type: 'phase_changed', phase: 'running_tools' });
    expect(c.screen()).toEqual({ prompt: null, spinner: 'running tools…' });
    expect(c.notices.find((n) => n.kind === 'update' && n.envelope.update.type === 'turn_started')).toMatchObject({ startedElsewhere: false });
    c.finished('turn_1');
    // Idle: the script's next line is taken in the same step.
    expect(c.state()).toBe('link:following.live turn:idle lines:commanding');
    expect(c.callTo('runCommand').input).toEqual({ kind: 'read_context', sessionId: 'ses_1' });
  });

  it('keeps a turn that ended before its start was answered ended', async () => {
    const c = chat();
    await c.open();
    c.line('hello');
    c.turnStarted('turn_1');
    c.finished('turn_1');
    expect(c.state()).toBe('link:following.live turn:idle lines:starting_turn');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    expect(c.screen().prompt).toBe(INPUT_PROMPT);
  });

  it('says a turn was queued, and a turn started from elsewhere', async () => {
    const c = chat();
    await c.open();
    c.line('hello');
    await c.answer('startTurn', { turnId: 'turn_9', status: 'queued' });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    expect(c.newNotices()).toContainEqual({ kind: 'turn_queued', turnId: 'turn_9' });
    c.turnStarted('turn_2', 'someone-else');
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    expect(c.newNotices()).toContainEqual(expect.objectContaining({ kind: 'update', startedElsewhere: true }));
  });

  it('drops an update it has already shown', async () => {
    const c = chat();
    await c.open('ses_1', { lastUpdateSequence: 5 });
    c.newNotices();
    c.turnStarted('turn_1'); // sequence 1, before the snapshot's 5
    expect(c.newNotices()).toEqual([]);
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
  });

  it('ends a script once its input ended and the running turn finished', async () => {
    const c = chat();
    await c.open();
    c.line('hello');
    c.actor.send({ type: 'input.ended' });
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.turnStarted('turn_1');
    // The input ended while the turn runs: the chat waits for it, and shows no prompt.
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    c.finished('turn_1');
    expect(c.state()).toBe('ending');
    expect(c.screen()).toEqual({ prompt: null, spinner: null });
    expect(c.feeds[0]!.stopped).toBe(true);
    await c.answer('closeClient');
    expect(c.actor.getSnapshot().status).toBe('done');
    expect(c.notices.some((n) => n.kind === 'leaving_turn')).toBe(false);
  });

  it('never prompts once the input ended, even while lines are left to take', async () => {
    const c = chat();
    c.line('/context');
    c.line('/sessions');
    c.actor.send({ type: 'input.ended' });
    await c.open();
    expect(c.state()).toBe('link:following.live turn:idle lines:commanding');
    expect(c.screen().prompt).toBeNull();
    await c.answer('runCommand', { kind: 'context_read', usage: { system: 1, conversation: 1, tools: 1, reservedOutput: 1, autoCompactLine: 10, window: 20, percentUsed: 40 } });
    expect(c.state()).toBe('link:following.live turn:idle lines:commanding');
    expect(c.screen().prompt).toBeNull();
    await c.answer('runCommand', { kind: 'sessions_listed', sessions: [] });
    expect(c.state()).toBe('ending');
    const taken = c.notices.filter((n) => n.kind === 'line_taken').map((n) => (n as { line: string }).line);
    expect(taken).toEqual(['/context', '/sessions']);
  });

  it('asks for an approval: the next line answers it, and the turn runs on', async () => {
    const c = chat();
    await c.open();
    c.line('write it');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.asks('turn_1');
    expect(c.state()).toBe('link:following.live turn:asking lines:waiting');
    expect(c.screen()).toEqual({ prompt: APPROVAL_PROMPT, spinner: null });
    c.newNotices();
    c.line('maybe');
    expect(c.newNotices()).toEqual([{ kind: 'line_taken', line: 'maybe', atApproval: true, typed: false }, { kind: 'bad_answer' }]);
    expect(c.state()).toBe('link:following.live turn:asking lines:waiting');
    c.line('a');
    expect(c.state()).toBe('link:following.live turn:running lines:answering');
    expect(c.callTo('resolvePermission').input).toEqual({ sessionId: 'ses_1', turnId: 'turn_1', toolCallId: 'call_1', decision: 'allow_once' });
    await c.answer('resolvePermission');
    c.update('turn_1', { type: 'permission_resolved', toolCallId: 'call_1', decision: 'allow_once' });
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    expect(c.actor.getSnapshot().context.answered).toBeNull();
  });

  it('asks again when an answer is refused while the approval is still pending, not when it is gone', async () => {
    const c = chat();
    await c.open();
    c.line('write it');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.asks('turn_1');
    c.line('d');
    await c.refuse('resolvePermission', 'HostUnreachable');
    expect(c.state()).toBe('link:following.live turn:asking lines:waiting');
    expect(c.screen().prompt).toBe(APPROVAL_PROMPT);
    expect(c.notices.at(-1)).toEqual({ kind: 'error', error: { code: 'HostUnreachable', message: 'HostUnreachable' } });
    c.line('d');
    expect(c.callTo('resolvePermission').input).toMatchObject({ decision: 'deny' });
    await c.refuse('resolvePermission', 'PermissionNotPending');
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
  });

  it('ends a script whose input ended with an approval pending, saying so', async () => {
    const c = chat();
    await c.open();
    c.line('write it');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.actor.send({ type: 'input.ended' });
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    c.asks('turn_1');
    expect(c.state()).toBe('ending');
    // Leaving a host's chat leaves its turn running there, and says so.
    expect(c.notices.slice(-3)).toEqual([
      expect.objectContaining({ kind: 'update' }),
      { kind: 'input_ended_at_approval' },
      { kind: 'leaving_turn', turnId: 'turn_1', backend: 'host' },
    ]);
  });

  it('Ctrl+C cancels the running turn; a refusal that says it is over ends it here', async () => {
    const c = chat();
    await c.open();
    c.line('long');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.newNotices();
    c.actor.send({ type: 'input.interrupted', atMs: 10_000 });
    expect(c.cancels).toEqual([{ sessionId: 'ses_1', turnId: 'turn_1' }]);
    expect(c.newNotices()).toEqual([{ kind: 'cancelling' }]);
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
    c.actor.send({ type: 'cancel.refused', turnId: 'turn_1', error: { code: 'TurnNotActive', message: 'over' } });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    expect(c.screen().prompt).toBe(INPUT_PROMPT);
    // Another refusal is only said.
    c.actor.send({ type: 'cancel.refused', turnId: 'turn_0', error: { code: 'Busy', message: 'no' } });
    expect(c.newNotices()).toEqual([
      { kind: 'error', error: { code: 'TurnNotActive', message: 'over' } },
      { kind: 'error', error: { code: 'Busy', message: 'no' } },
    ]);
  });

  it('Ctrl+C while a turn is being started cancels it once its id is known', async () => {
    const c = chat();
    await c.open();
    c.line('long');
    c.actor.send({ type: 'input.interrupted', atMs: 10_000 });
    expect(c.cancels).toEqual([]);
    expect(c.notices.at(-1)).toEqual({ kind: 'cancelling' });
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    expect(c.cancels).toEqual([{ sessionId: 'ses_1', turnId: 'turn_1' }]);
    expect(c.state()).toBe('link:following.live turn:running lines:waiting');
  });

  it('Ctrl+C when nothing runs asks for another; the second one, or two quick ones, end the chat', async () => {
    const c = chat();
    await c.open();
    c.actor.send({ type: 'input.interrupted', atMs: 10_000 });
    expect(c.notices.at(-1)).toEqual({ kind: 'exit_hint' });
    // A line in between disarms it.
    c.line('');
    c.actor.send({ type: 'input.interrupted', atMs: 20_000 });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    c.actor.send({ type: 'input.interrupted', atMs: 30_000 });
    expect(c.state()).toBe('ending');

    const quick = chat();
    await quick.open();
    quick.line('long');
    await quick.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    quick.actor.send({ type: 'input.interrupted', atMs: 10_000 });
    quick.actor.send({ type: 'input.interrupted', atMs: 10_000 + DOUBLE_INTERRUPT_MS - 1 });
    expect(quick.state()).toBe('ending');
    expect(quick.notices.at(-1)).toEqual({ kind: 'leaving_turn', turnId: 'turn_1', backend: 'host' });
  });

  it('a terminal\'s Ctrl+D leaves at once, a running embedded turn with it', async () => {
    const c = chat({ interactive: true, backend: 'embedded' });
    await c.open();
    c.line('long');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    // Typed while the turn runs: sent anyway, the host decides.
    c.line('more');
    expect(c.state()).toBe('link:following.live turn:running lines:starting_turn');
    expect(c.notices.at(-1)).toEqual({ kind: 'sent_while_running' });
    expect(c.callTo('startTurn').input).toMatchObject({ text: 'more', clientRequestId: `${PREFIX}-2` });
    c.actor.send({ type: 'input.ended' });
    expect(c.state()).toBe('ending');
    expect(c.notices.at(-1)).toEqual({ kind: 'leaving_turn', turnId: 'turn_1', backend: 'embedded' });
    expect(c.calls.at(-1)?.actor).toBe('closeClient');
  });

  it('SIGTERM (chat.leave) and /exit leave', async () => {
    const c = chat();
    await c.open();
    c.actor.send({ type: 'chat.leave' });
    expect(c.state()).toBe('ending');
    const d = chat();
    await d.open();
    d.line('/exit');
    expect(d.state()).toBe('ending');
  });

  it('reconnects: says the connection is lost, takes lines meanwhile, says when it is back', async () => {
    const c = chat();
    await c.open();
    c.newNotices();
    c.actor.send({ type: 'feed.connection_lost', error: { code: 'ConnectionLost', message: 'gone' } });
    expect(c.state()).toBe('link:following.reconnecting turn:idle lines:waiting');
    expect(c.screen().prompt).toBe(INPUT_PROMPT);
    c.line('/context');
    await c.refuse('runCommand', 'HostUnreachable', 'cannot reach it');
    c.line('are you there?');
    await c.refuse('startTurn', 'HostUnreachable', 'cannot reach it');
    expect(c.state()).toBe('link:following.reconnecting turn:idle lines:waiting');
    c.actor.send({ type: 'feed.connection_restored' });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    expect(c.newNotices().filter((n) => n.kind !== 'line_taken')).toEqual([
      { kind: 'connection_lost', error: { code: 'ConnectionLost', message: 'gone' } },
      { kind: 'error', error: { code: 'HostUnreachable', message: 'cannot reach it' } },
      { kind: 'error', error: { code: 'HostUnreachable', message: 'cannot reach it' } },
      { kind: 'connection_restored' },
    ]);
  });

  it('catches up from a snapshot after an outage: a turn that ended unseen is reported, a new one followed', async () => {
    const c = chat();
    await c.open();
    c.line('long');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.actor.send({ type: 'feed.connection_lost', error: { code: 'ConnectionLost', message: 'gone' } });
    c.newNotices();
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_1', { lastUpdateSequence: 40, runtime: running('turn_2', { toolCallId: 'call_7', name: 'write_file', paths: ['b.md'] }) }), resumed: true });
    expect(c.state()).toBe('link:following.live turn:asking lines:waiting');
    expect(c.statusRequests).toEqual([{ sessionId: 'ses_1', turnId: 'turn_1' }]);
    expect(c.newNotices()).toEqual([
      { kind: 'caught_up' },
      { kind: 'turn_running', turnId: 'turn_2', phase: 'waiting_permission' },
      { kind: 'approval_needed', name: 'write_file', paths: ['b.md'] },
    ]);
    c.actor.send({ type: 'turn_status.received', turnId: 'turn_1', outcome: { status: 'completed', finalText: 'x' } });
    expect(c.newNotices()).toEqual([{ kind: 'outcome', outcome: { status: 'completed', finalText: 'x' } }]);
    // The approval the snapshot showed is answered like any other.
    c.line('a');
    expect(c.callTo('resolvePermission').input).toEqual({ sessionId: 'ses_1', turnId: 'turn_2', toolCallId: 'call_7', decision: 'allow_once' });
    // A snapshot showing nothing running: the turn is over.
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_1', { lastUpdateSequence: 50 }), resumed: true });
    expect(c.state()).toBe('link:following.live turn:idle lines:answering');
    expect(c.statusRequests.at(-1)).toEqual({ sessionId: 'ses_1', turnId: 'turn_2' });
  });

  it('a feed that ends ends the running turn here; lines go on', async () => {
    const c = chat();
    await c.open();
    c.line('long');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.actor.send({ type: 'feed.ended', error: { code: 'SessionClosed', message: 'closed' } });
    expect(c.state()).toBe('link:ended turn:idle lines:waiting');
    expect(c.notices.at(-1)).toEqual({ kind: 'feed_ended', error: { code: 'SessionClosed', message: 'closed' } });
    expect(c.screen().prompt).toBe(INPUT_PROMPT);
  });

  it('/mode shows, checks and sets the mode; /compact says it compacts', async () => {
    const c = chat();
    await c.open();
    c.newNotices();
    c.line('/mode');
    c.line('/mode sideways');
    expect(c.newNotices().filter((n) => n.kind !== 'line_taken')).toEqual([
      { kind: 'mode', mode: 'ask' },
      { kind: 'usage', usage: '/mode ask|auto|read_only' },
    ]);
    c.line('/mode auto');
    expect(c.callTo('runCommand').input).toEqual({ kind: 'set_mode', sessionId: 'ses_1', mode: 'auto' });
    await c.answer('runCommand', { kind: 'mode_set', mode: 'auto' });
    expect(c.actor.getSnapshot().context.mode).toBe('auto');
    c.line('/compact');
    expect(c.notices.at(-1)).toEqual({ kind: 'compacting' });
    await c.answer('runCommand', { kind: 'compacted', compactionId: 'cmp_1' });
    c.line('/what');
    expect(c.notices.at(-1)).toEqual({ kind: 'unknown_command', name: 'what' });
  });

  it('/new and /open switch the session once the other one is open; not while a turn runs', async () => {
    const c = chat();
    await c.open();
    c.line('long');
    await c.answer('startTurn', { turnId: 'turn_1', status: 'running' });
    c.asks('turn_1');
    c.line('/open ses_2');
    expect(c.notices.at(-1)).toEqual({ kind: 'busy' });
    c.finished('turn_1');
    c.line('/open');
    expect(c.notices.at(-1)).toEqual({ kind: 'usage', usage: '/open SESSION_ID' });
    c.line('/open ses_2');
    expect(c.state()).toBe('link:following.live turn:idle lines:switching');
    expect(c.callTo('openSession').input).toEqual({ sessionId: 'ses_2', permissionMode: null, agent: null });
    await c.answer('openSession', { sessionId: 'ses_2', permissionMode: 'read_only', created: false });
    expect(c.state()).toBe('link:following.connecting turn:idle lines:waiting');
    expect(c.feeds).toEqual([
      { sessionId: 'ses_1', stopped: true },
      { sessionId: 'ses_2', stopped: false },
    ]);
    expect(c.notices.at(-1)).toEqual({ kind: 'session_opened', sessionId: 'ses_2', created: false, mode: 'read_only' });
    expect(c.actor.getSnapshot().context).toMatchObject({ sessionId: 'ses_2', mode: 'read_only', lastSequence: -1, turnId: null });
    // A refused switch keeps the session.
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_2'), resumed: false });
    c.line('/new');
    await c.refuse('openSession', 'HostUnreachable');
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
    expect(c.actor.getSnapshot().context.sessionId).toBe('ses_2');
  });

  it('a first connection that fails goes reconnecting, and lines are taken meanwhile', async () => {
    const c = chat();
    await c.answer('openSession', { sessionId: 'ses_1', permissionMode: 'ask', created: false });
    c.actor.send({ type: 'feed.connection_lost', error: { code: 'HostUnreachable', message: 'down' } });
    expect(c.state()).toBe('link:following.reconnecting turn:idle lines:waiting');
    expect(c.screen().prompt).toBe(INPUT_PROMPT);
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_1'), resumed: false });
    expect(c.state()).toBe('link:following.live turn:idle lines:waiting');
  });
});

describe('choosing agents', () => {
  it('--agent is the agent of the session the chat creates', async () => {
    const c = chat({ newSessionAgent: 'reviewer' });
    expect(c.callTo('openSession').input).toEqual({ sessionId: null, permissionMode: null, agent: 'reviewer' });
    await c.answer('openSession', { sessionId: 'ses_1', permissionMode: 'ask', created: true, agent: 'reviewer' });
    expect(c.notices.at(-1)).toEqual({ kind: 'session_opened', sessionId: 'ses_1', created: true, mode: 'ask', agent: 'reviewer' });
  });

  it('/agents asks the backend for the list; /new AGENT opens a session of that agent, /new one of --agent', async () => {
    const c = chat({ newSessionAgent: 'builder' });
    await c.open();
    c.line('/agents');
    expect(c.callTo('runCommand').input).toEqual({ kind: 'list_agents' });
    await c.answer('runCommand', { kind: 'agents_listed', agents: [] });
    c.line('/new reviewer');
    expect(c.callTo('openSession').input).toEqual({ sessionId: null, permissionMode: null, agent: 'reviewer' });
    await c.answer('openSession', { sessionId: 'ses_2', permissionMode: 'ask', created: true, agent: 'reviewer' });
    c.actor.send({ type: 'feed.snapshot_received', snapshot: snapshotOf('ses_2'), resumed: false });
    c.line('/new');
    expect(c.callTo('openSession').input).toEqual({ sessionId: null, permissionMode: null, agent: 'builder' });
  });
});
