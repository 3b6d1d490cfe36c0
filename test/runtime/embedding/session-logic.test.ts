import { EMPTY } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assign, createActor, fromEventObservable, sendTo, setup, spawnChild, waitFor, type AnyActorRef } from 'xstate';
import {
  createRuntime,
  scriptedModel,
  TurnchartError,
  type CommandAnswer,
  type EmbeddedSessionEmitted,
  type EmbeddedSessionInput,
  type Runtime,
  type RuntimeOptions,
  type ScriptedStep,
  type SessionCommand,
  type SessionLogic,
  type TurnchartParentEvent,
  type SessionStorage,
  type UpdateEnvelope,
} from '../../../src/index.js';
import { durableTargets, sqliteFile, type DurableDatabase } from '../../support/databases.js';
import { blockingTool, crash, readFileTool, runTurn, writeFileTool } from '../../support/harness.js';

const runtimes: Runtime[] = [];
const databases = new Map<string, DurableDatabase>();
let createDatabase: () => DurableDatabase = sqliteFile;
afterEach(async () => {
  for (const r of runtimes.splice(0).reverse()) await r.shutdown().catch(() => undefined);
  for (const db of databases.values()) await db.drop();
  databases.clear();
});

/** A runtime on a durable database (the same one for every call in a test unless named otherwise). */
async function runtimeOn(steps: ScriptedStep[], options: Partial<RuntimeOptions> & { db?: string } = {}) {
  const name = options.db ?? 'sessions';
  let db = databases.get(name);
  if (!db) databases.set(name, (db = createDatabase()));
  const model = scriptedModel(steps);
  const storage = db.open();
  const runtime = await createRuntime({ model, tools: [readFileTool(), writeFileTool()], ...options, storage });
  runtimes.push(runtime);
  return { runtime, model, storage };
}

type HostEvent = TurnchartParentEvent | { type: 'SEND'; command: SessionCommand };

/** A host machine that invokes the session, keeps what it hears from it and forwards `SEND`s to it. */
function hostOf(logic: SessionLogic, input: EmbeddedSessionInput) {
  return setup({
    types: { context: {} as { heard: TurnchartParentEvent[]; error: unknown; output: unknown }, events: {} as HostEvent },
    actors: { agent: logic },
  }).createMachine({
    context: { heard: [], error: null, output: null },
    invoke: {
      id: 'agent',
      src: 'agent',
      input,
      onError: { target: '.failed', actions: assign({ error: ({ event }) => event.error }) },
      onDone: { target: '.closed', actions: assign({ output: ({ event }) => event.output }) },
    },
    on: {
      'turnchart.*': { actions: assign({ heard: ({ context, event }) => [...context.heard, event as TurnchartParentEvent] }) },
      SEND: { actions: sendTo('agent', ({ event }) => event.command) },
    },
    initial: 'working',
    states: { working: {}, failed: {}, closed: {} },
  });
}

function startHost(logic: SessionLogic, input: EmbeddedSessionInput) {
  const host = createActor(hostOf(logic, input)).start();
  const agent = host.getSnapshot().children.agent!;
  const emitted = listen(agent);
  const send = (command: SessionCommand) => host.send({ type: 'SEND', command });
  return { host, agent, emitted, send };
}

/** Everything an embedded session actor emits, in order. */
function listen(agent: AnyActorRef) {
  const heard: EmbeddedSessionEmitted[] = [];
  for (const type of ['opened', 'update', 'reply'] as const) agent.on(type, (event: EmbeddedSessionEmitted) => heard.push(event));
  return {
    heard,
    updates: () => heard.flatMap((e) => (e.type === 'update' ? [e.envelope] : [])),
    replies: () => heard.flatMap((e) => (e.type === 'reply' ? [e] : [])),
  };
}

/** Resolves with the first emitted event that matches (already heard or still to come). */
function whenEmitted<T extends EmbeddedSessionEmitted>(agent: AnyActorRef, heard: EmbeddedSessionEmitted[], match: (e: EmbeddedSessionEmitted) => e is T): Promise<T> {
  const found = heard.find(match);
  if (found) return Promise.resolve(found);
  return new Promise((resolve) => {
    const subs = (['opened', 'update', 'reply'] as const).map((type) =>
      agent.on(type, (event: EmbeddedSessionEmitted) => {
        if (!match(event)) return;
        for (const s of subs) s.unsubscribe();
        resolve(event);
      }),
    );
  });
}

const isUpdate =
  (type: UpdateEnvelope['update']['type']) =>
  (e: EmbeddedSessionEmitted): e is Extract<EmbeddedSessionEmitted, { type: 'update' }> =>
    e.type === 'update' && e.envelope.update.type === type;

const heardOf = <T extends TurnchartParentEvent['type']>(host: { getSnapshot(): { context: { heard: TurnchartParentEvent[] } } }, type: T) =>
  host.getSnapshot().context.heard.filter((e): e is Extract<TurnchartParentEvent, { type: T }> => e.type === type);

function closed(runtime: Runtime, sessionId: string): Promise<void> {
  if (!runtime.isOpen(sessionId)) return Promise.resolve();
  return new Promise((resolve) => {
    const sub = runtime.sessionClosed$.subscribe((id) => {
      if (id !== sessionId) return;
      sub.unsubscribe();
      resolve();
    });
  });
}

const write = (id: string, file: string) => ({ id, name: 'write_file', args: { path: file, text: 'x' } });
const text = (clientRequestId: string, words: string): SessionCommand => ({ type: 'session.start_turn', clientRequestId, input: [{ type: 'text', text: words }] });

describe.each(durableTargets)('embedding on $name', ({ skip, create }) => {
  beforeEach(() => {
    createDatabase = create;
  });

  describe('runtime.sessionLogic invoked by a host machine', () => {
    it.skipIf(skip)('takes typed commands (sent before it opened, too), emits every envelope and tells the parent what it opted into', async () => {
      const { runtime } = await runtimeOn([{ text: 'writing', toolCalls: [write('w1', 'a.txt')] }, { text: 'written' }]);
      const stream: UpdateEnvelope[] = [];
      runtime.updates$.subscribe((u) => stream.push(u));
      const { host, agent, emitted, send } = startHost(runtime.sessionLogic, { permissionMode: 'ask', notifyParent: true });
      send(text('c1', 'write a.txt'));

      const asked = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.permission_requested'));
      const sessionId = asked.context.heard[0]!.sessionId!;
      const [request] = heardOf(host, 'turnchart.permission_requested');
      expect(request).toEqual({
        type: 'turnchart.permission_requested',
        sessionId,
        turnId: expect.stringMatching(/^turn_/),
        toolCallId: 'w1',
        tool: 'write_file',
        args: { path: 'a.txt', text: 'x' },
        paths: ['a.txt'],
      });
      send({ type: 'session.resolve_permission', turnId: request!.turnId, toolCallId: 'w1', decision: 'allow_once' });
      await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));

      expect(host.getSnapshot().context.heard.map((e) => e.type)).toEqual([
        'turnchart.session_opened',
        'turnchart.turn_started',
        'turnchart.permission_requested',
        'turnchart.turn_finished',
      ]);
      expect(heardOf(host, 'turnchart.turn_finished')[0]).toEqual({
        type: 'turnchart.turn_finished',
        sessionId,
        turnId: request!.turnId,
        outcome: { status: 'completed', finalText: 'written' },
      });
      expect(heardOf(host, 'turnchart.turn_started')[0]).toMatchObject({ turnId: request!.turnId, clientRequestId: 'c1' });
      expect(emitted.heard[0]).toEqual({ type: 'opened', sessionId });
      expect(emitted.replies().map((r) => [r.command.type, r.result])).toEqual([
        ['session.start_turn', { ok: true, turnId: request!.turnId }],
        ['session.resolve_permission', { ok: true }],
      ]);

      // The envelopes the host heard are the session's own: gapless from 1, the runtime's stream, the replay ring.
      const updates = emitted.updates();
      expect(updates.map((u) => u.sequence)).toEqual(updates.map((_, i) => i + 1));
      expect(updates).toEqual(stream.filter((u) => u.sessionId === sessionId));
      const replay = runtime.openHandle(sessionId)!.replayUpdates(0);
      expect(replay).toEqual({ ok: true, updates });
      expect(updates.at(-1)!.update.type).toBe('turn_finished');
      expect(agent.getSnapshot().status).toBe('active');
    });

    it.skipIf(skip)('persists and sequences exactly as a session driven through SessionHandle: same rows, same update sequence, continued after a reopen', async () => {
      const steps: ScriptedStep[] = [{ text: 'let me look', toolCalls: [{ id: 'r1', name: 'read_file', args: { path: 'a.txt' } }] }, { text: 'a.txt is there' }];
      const embedded = await runtimeOn(steps, { db: 'embedded' });
      const direct = await runtimeOn(steps, { db: 'direct' });

      const { host, emitted, send } = startHost(embedded.runtime.sessionLogic, { permissionMode: 'ask', notifyParent: true });
      send(text('c1', 'what is in a.txt?'));
      await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      const embeddedId = heardOf(host, 'turnchart.session_opened')[0]!.sessionId;

      const handle = await direct.runtime.createSession({ permissionMode: 'ask' });
      const directUpdates: UpdateEnvelope[] = [];
      handle.updates$.subscribe((u) => directUpdates.push(u));
      await runTurn(handle, 'what is in a.txt?', 'c1');

      const shape = (u: UpdateEnvelope) => ({ sequence: u.sequence, update: u.update });
      expect(emitted.updates().map(shape)).toEqual(directUpdates.map(shape));
      const rows = async ({ storage }: { storage: SessionStorage }, sessionId: string) => {
        const messages = (await storage.listMessages(sessionId)).map((m) => ({ sequence: m.sequence, message: m.message }));
        const turns = (await storage.listTurns(sessionId)).map((t) => ({ status: t.status, clientRequestId: t.clientRequestId, finalText: t.finalText }));
        return { messages, turns };
      };
      expect(await rows(embedded, embeddedId)).toEqual(await rows(direct, handle.id));

      // After the host stops, the session's numbering goes on from the last envelope it heard.
      host.stop();
      await closed(embedded.runtime, embeddedId);
      const reopened = await embedded.runtime.openSession(embeddedId);
      const last = emitted.updates().at(-1)!.sequence;
      expect(reopened.snapshot().lastUpdateSequence).toBe(last);
      const next: UpdateEnvelope[] = [];
      reopened.updates$.subscribe((u) => next.push(u));
      await runTurn(reopened, 'and again?', 'c2');
      expect(next[0]!.sequence).toBe(last + 1);
    });

    it.skipIf(skip)('works spawned with spawnChild, and on its own with createActor (no parent to notify)', async () => {
      const { runtime } = await runtimeOn([{ text: 'first answer' }, { text: 'second answer' }]);
      const spawner = setup({
        types: { context: {} as { heard: TurnchartParentEvent[] }, events: {} as HostEvent },
        actors: { agent: runtime.sessionLogic },
      }).createMachine({
        context: { heard: [] },
        entry: spawnChild('agent', { id: 'session', input: { notifyParent: true } }),
        on: {
          'turnchart.*': { actions: assign({ heard: ({ context, event }) => [...context.heard, event as TurnchartParentEvent] }) },
          SEND: { actions: sendTo('session', ({ event }) => event.command) },
        },
      });
      const host = createActor(spawner).start();
      host.send({ type: 'SEND', command: text('s1', 'hello') });
      const done = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      expect(done.context.heard.find((e) => e.type === 'turnchart.turn_finished')).toMatchObject({ outcome: { status: 'completed', finalText: 'first answer' } });

      const alone = createActor(runtime.sessionLogic, { input: { notifyParent: true, permissionMode: 'auto' } });
      const emitted = listen(alone);
      alone.start();
      alone.send(text('a1', 'hello'));
      const finished = await whenEmitted(alone, emitted.heard, isUpdate('turn_finished'));
      expect(finished.envelope.update).toEqual({ type: 'turn_finished', outcome: { status: 'completed', finalText: 'second answer' } });
      expect(alone.getSnapshot().status).toBe('active');
      alone.stop();
      await closed(runtime, finished.envelope.sessionId);
    });

    it.skipIf(skip)('answers bad commands with typed errors — to .on("reply") and the parent — and keeps working', async () => {
      const { runtime } = await runtimeOn([{ text: 'still here' }]);
      const { host, agent, emitted, send } = startHost(runtime.sessionLogic, { notifyParent: true });
      await whenEmitted(agent, emitted.heard, (e): e is Extract<EmbeddedSessionEmitted, { type: 'opened' }> => e.type === 'opened');
      const throwing = Object.defineProperty({ type: 'session.start_turn', clientRequestId: 'g' }, 'input', {
        enumerable: true,
        get() {
          throw new Error('a getter that throws');
        },
      });
      const bad: [object, string][] = [
        [{ type: 'session.start_turn', clientRequestId: 'x', input: 5 }, 'InvalidInput'],
        [{ type: 'session.start_turn', clientRequestId: '', input: [{ type: 'text', text: 'hi' }] }, 'InvalidInput'],
        [{ type: 'session.start_turn', clientRequestId: 'blank', input: [{ type: 'text', text: '  ' }] }, 'EmptyInput'],
        [throwing, 'InvalidInput'],
        [{ type: 'session.resolve_permission', turnId: 't', toolCallId: 'c', decision: 'maybe' }, 'InvalidInput'],
        [{ type: 'session.resolve_permission', turnId: 't', toolCallId: 'c', decision: 'deny' }, 'TurnNotActive'],
        [{ type: 'session.cancel_turn' }, 'InvalidInput'],
        [{ type: 'session.cancel_turn', turnId: 'turn_nope' }, 'TurnNotActive'],
        [{ type: 'session.set_mode', mode: 'yolo' }, 'InvalidInput'],
        [{ type: 'session.deliver_agent_message', from: 'x', text: '' }, 'InvalidInput'],
        [{ type: 'session.rewind', compactionId: 42 }, 'InvalidInput'],
        [{ type: 'session.teleport' }, 'UnknownCommand'],
        [{ type: 'HELLO' }, 'UnknownCommand'],
        // The bridge's own event types, sent by the host: answered, never taken for the session's word.
        [{ type: 'bridge.reply' }, 'UnknownCommand'],
        [{ type: 'bridge.update', envelope: null }, 'UnknownCommand'],
        [{ type: 'bridge.permission_requested' }, 'UnknownCommand'],
        [{ type: 'bridge.opened', sessionId: 'ses_forged' }, 'UnknownCommand'],
      ];
      for (const [command] of bad) agent.send(command as SessionCommand);
      await waitFor(host, (s) => s.context.heard.filter((e) => e.type === 'turnchart.command_failed').length === bad.length);

      for (const [command, code] of bad) {
        const reply = emitted.replies().find((r) => r.command === command);
        expect(reply?.result, (command as { type: string }).type).toMatchObject({ ok: false, error: { code } });
      }
      expect(heardOf(host, 'turnchart.command_failed').map((e) => e.error.code).sort()).toEqual(bad.map(([, code]) => code).sort());
      expect(host.getSnapshot().status).toBe('active');
      expect(agent.getSnapshot().status).toBe('active');

      send(text('ok', 'are you there?'));
      const done = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      expect(done.context.heard.find((e) => e.type === 'turnchart.turn_finished')).toMatchObject({ outcome: { status: 'completed', finalText: 'still here' } });
    });

    it.skipIf(skip)('runs commands sent while opening in the order they were sent', async () => {
      const { runtime } = await runtimeOn([{ text: 'writing', toolCalls: [write('w1', 'a.txt')] }, { text: 'could not write' }]);
      const { host, emitted, send } = startHost(runtime.sessionLogic, { permissionMode: 'auto', notifyParent: true });
      send({ type: 'session.set_mode', mode: 'read_only' });
      send(text('c1', 'write a.txt'));
      await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      expect(emitted.replies().map((r) => r.command.type)).toEqual(['session.set_mode', 'session.start_turn']);
      // read_only was in force when the write was screened: denied by rule, no approval asked.
      expect(emitted.updates().find((u) => u.update.type === 'tool_call_finished')?.update).toMatchObject({ toolCallId: 'w1', status: 'denied' });
      expect(heardOf(host, 'turnchart.permission_requested')).toEqual([]);
    });
  });

  describe('opening an embedded session: failures are the actor error a host handles with onError', () => {
    it.skipIf(skip)('bad input, an unknown session', async () => {
      const { runtime } = await runtimeOn([]);
      for (const [input, code] of [
        [{ permissionMode: 'yolo' }, 'InvalidInput'],
        [{ sessionId: '' }, 'InvalidInput'],
        [{ notifyParent: 'yes' }, 'InvalidInput'],
        [{ sessionId: 'ses_missing' }, 'UnknownSession'],
      ] as const) {
        const host = createActor(hostOf(runtime.sessionLogic, input as EmbeddedSessionInput)).start();
        const failed = await waitFor(host, (s) => s.matches('failed'));
        expect(failed.context.error, JSON.stringify(input)).toBeInstanceOf(TurnchartError);
        expect((failed.context.error as TurnchartError).code).toBe(code);
      }
      expect(runtime.openSessionCount).toBe(0);
    });

    it.skipIf(skip)('one actor per session: a second embedding is refused, another live runtime is refused, a stopped embedding frees the session', async () => {
      const { runtime } = await runtimeOn([]);
      const first = startHost(runtime.sessionLogic, { notifyParent: true });
      await waitFor(first.host, (s) => s.context.heard.length > 0);
      const sessionId = heardOf(first.host, 'turnchart.session_opened')[0]!.sessionId;

      const second = createActor(hostOf(runtime.sessionLogic, { sessionId })).start();
      expect((await waitFor(second, (s) => s.matches('failed'))).context.error).toMatchObject({ code: 'SessionEmbedded' });

      const other = await runtimeOn([]);
      const elsewhere = createActor(hostOf(other.runtime.sessionLogic, { sessionId })).start();
      expect((await waitFor(elsewhere, (s) => s.matches('failed'))).context.error).toMatchObject({ code: 'SessionOwnedElsewhere' });

      first.host.stop();
      const third = startHost(runtime.sessionLogic, { sessionId, notifyParent: true });
      await waitFor(third.host, (s) => s.context.heard.some((e) => e.type === 'turnchart.session_opened'));
      expect(third.host.getSnapshot().matches('working')).toBe(true);
    });

    it.skipIf(skip)('a host stopped while the session opens leaves nothing open', async () => {
      const { runtime } = await runtimeOn([]);
      const host = createActor(hostOf(runtime.sessionLogic, {})).start();
      host.stop();
      const id = await new Promise<string>((resolve) => runtime.sessionClosed$.subscribe(resolve));
      expect(runtime.isOpen(id)).toBe(false);
      expect(runtime.openSessionCount).toBe(0);
    });
  });

  describe('stopping and restarting around an embedded session', () => {
    it.skipIf(skip)('stopping the host mid-turn ends the turn actor_stopped and aborts the tool, exactly as runtime.shutdown() does where turns are not resumed', async () => {
      const viaHost = blockingTool();
      const viaShutdown = blockingTool();
      const steps: ScriptedStep[] = [{ text: 'working', toolCalls: [{ id: 'j1', name: 'long_job', args: {} }] }, { text: 'ready again' }];
      // Issue 26: a shutdown parks the turns of sessions that resume theirs; these do not.
      const embedded = await runtimeOn(steps, { db: 'host', tools: [viaHost.tool], resumeTurns: false });
      const direct = await runtimeOn(steps, { db: 'shutdown', tools: [viaShutdown.tool], resumeTurns: false });

      const { host, send } = startHost(embedded.runtime.sessionLogic, { notifyParent: true });
      send(text('c1', 'run the job'));
      await viaHost.started;
      const { sessionId, turnId } = heardOf(host, 'turnchart.turn_started')[0]!;
      host.stop();
      await closed(embedded.runtime, sessionId);

      const handle = await direct.runtime.createSession();
      const started = await handle.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'run the job' }] });
      await viaShutdown.started;
      await direct.runtime.shutdown();

      expect(viaHost.seen.aborted).toBe(true);
      expect(viaShutdown.seen.aborted).toBe(true);
      const reopenedDirect = await runtimeOn([], { db: 'shutdown' });
      const stored = async ({ storage }: { storage: SessionStorage }, session: string, turn: string) => {
        const row = await storage.getTurn(turn);
        const results = (await storage.listMessages(session)).flatMap((m) => (m.message.role === 'tool' ? [m.message.status] : []));
        return { status: row?.status, errorCode: row?.errorCode, results };
      };
      const viaHostRows = await stored(embedded, sessionId, turnId);
      expect(await stored(reopenedDirect, handle.id, started.ok ? started.turnId : '')).toEqual(viaHostRows);
      expect(viaHostRows).toEqual({ status: 'failed', errorCode: 'actor_stopped', results: ['outcome_unknown'] });

      // Reopened through the runtime, the embedded session reports the stop and goes on.
      const reopened = await embedded.runtime.openSession(sessionId);
      expect(await reopened.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'actor_stopped' });
      expect((await runTurn(reopened, 'again', 'c2')).outcome).toEqual({ status: 'completed', finalText: 'ready again' });
    });

    it.skipIf(skip)('restart correction: a runtime that died mid-turn under an embedding host is corrected, and the session embeds again', async () => {
      const job = blockingTool();
      // RT-24 as it stays for sessions that do not resume their turns (test/runtime/durability/resume.test.ts has the rest).
      const first = await runtimeOn([{ text: 'working', toolCalls: [{ id: 'j1', name: 'long_job', args: {} }] }], { tools: [job.tool], resumeTurns: false });
      const { host, send } = startHost(first.runtime.sessionLogic, { notifyParent: true });
      send(text('c1', 'run the job'));
      await job.started;
      const { sessionId, turnId } = heardOf(host, 'turnchart.turn_started')[0]!;
      crash(first.runtime);

      const second = await runtimeOn([{ text: 'the job was interrupted; not retrying' }], { tools: [job.tool] });
      expect(second.runtime.correction).toMatchObject({ interruptedTurns: 1 });
      const again = startHost(second.runtime.sessionLogic, { sessionId, notifyParent: true });
      again.send(text('c2', 'what happened?'));
      const done = await waitFor(again.host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      expect(done.context.heard.find((e) => e.type === 'turnchart.turn_finished')).toMatchObject({ outcome: { status: 'completed' } });
      const storage = second.storage;
      expect(await storage.getTurn(turnId)).toMatchObject({ status: 'interrupted', errorCode: 'process_restart' });
      const request = second.model.requests[0]!;
      expect(request.messages.find((m) => m.role === 'tool')).toMatchObject({ role: 'tool', toolCallId: 'j1' });
      // The dead runtime's host still believes it holds the session; stopping it writes nothing over the new owner's work.
      host.stop();
      await closed(first.runtime, sessionId);
      expect(await storage.getTurn(turnId)).toMatchObject({ status: 'interrupted' });
      expect(await storage.listTurns(sessionId)).toMatchObject([{ status: 'interrupted' }, { status: 'completed' }]);
    });

    it.skipIf(skip)('an embedded session is never closed as idle: its actor listens to it', async () => {
      const { runtime } = await runtimeOn([{ text: 'done' }, { text: 'done too' }], { idleTtlMs: 0 });
      const { host, send } = startHost(runtime.sessionLogic, { notifyParent: true });
      send(text('c1', 'hello'));
      const done = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      const embeddedId = heardOf(host, 'turnchart.session_opened')[0]!.sessionId;
      // A plain session on the same runtime goes idle after its turn and is closed; its timer was armed after the embedded one's would have been.
      const plain = await runtime.createSession();
      await runTurn(plain, 'hello');
      await closed(runtime, plain.id);
      expect(runtime.isOpen(embeddedId)).toBe(true);
      expect(done.matches('working')).toBe(true);
    });

    it.skipIf(skip)('the session closing under the host (runtime shut down) ends the actor: the host hears onDone with the session id', async () => {
      const { runtime } = await runtimeOn([]);
      const { host } = startHost(runtime.sessionLogic, { notifyParent: true });
      await waitFor(host, (s) => s.context.heard.length > 0);
      const sessionId = heardOf(host, 'turnchart.session_opened')[0]!.sessionId;
      await runtime.shutdown();
      const ended = await waitFor(host, (s) => s.matches('closed'));
      expect(ended.context.output).toEqual({ sessionId });
    });
  });

  describe('.provide() on runtime.sessionLogic', () => {
    it.skipIf(skip)("a host's approval policy answers what it covers; the rest still reaches the parent", async () => {
      const { runtime } = await runtimeOn([
        { text: 'notes first', toolCalls: [write('w1', 'notes/a.md'), write('w2', 'secrets.txt')] },
        { text: 'never reached' },
      ]);
      const logic = runtime.sessionLogic.provide({
        guards: {
          allowsAutomatically: (_, request) => request.tool === 'write_file' && request.paths.every((p) => p.startsWith('notes/')),
          deniesAutomatically: (_, request) => request.paths.some((p) => p.includes('secret')),
        },
      });
      const { host, emitted, send } = startHost(logic, { permissionMode: 'ask', notifyParent: true });
      send(text('c1', 'write both'));
      const done = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      expect(done.context.heard.find((e) => e.type === 'turnchart.turn_finished')).toMatchObject({ outcome: { status: 'failed', code: 'permission_denied' } });
      expect(heardOf(host, 'turnchart.permission_requested')).toEqual([]);
      const resolved = emitted.updates().flatMap((u) => (u.update.type === 'permission_resolved' ? [[u.update.toolCallId, u.update.decision]] : []));
      expect(resolved).toEqual([
        ['w1', 'allow_once'],
        ['w2', 'deny'],
      ]);
    });

    it.skipIf(skip)("puts the runtime's bridge back: overriding sessionBridge or runCommand is ignored, with a warning", async () => {
      const warnings: string[] = [];
      const { runtime, storage } = await runtimeOn([{ text: 'persisted anyway' }], { warn: (m) => warnings.push(m) });
      const logic = runtime.sessionLogic.provide({
        actors: { sessionBridge: fromEventObservable(() => EMPTY) as never },
        actions: { runCommand: () => undefined },
      });
      const { host, send } = startHost(logic, { notifyParent: true });
      send(text('c1', 'hello'));
      const done = await waitFor(host, (s) => s.context.heard.some((e) => e.type === 'turnchart.turn_finished'));
      const { sessionId, turnId } = done.context.heard.find((e) => e.type === 'turnchart.turn_finished') as Extract<TurnchartParentEvent, { type: 'turnchart.turn_finished' }>;
      expect(await storage.getTurn(turnId)).toMatchObject({ sessionId, status: 'completed', finalText: 'persisted anyway' });
      expect(warnings.filter((w) => w.includes('sessionLogic.provide()'))).toHaveLength(2);
    });
  });
});

// Keeps the command answer type in the public surface honest.
const _answer: CommandAnswer = { ok: false, error: { code: 'Busy', turnId: 't' } };
void _answer;
