import { randomUUID } from 'node:crypto';
import { AbstractChat, DefaultChatTransport, type ChatInit, type ChatState, type ChatStatus, type UIMessage } from 'ai';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteTaskStorage } from '../../storage/sqlite.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import { createApp } from '../../src/host/app.js';
import { approvalId } from '../../src/host/approval-id.js';
import { authentication } from '../../src/host/auth.js';
import type { HostContext } from '../../src/host/host-context.js';
import type { SessionListEntry } from '../../src/inspect/stream-protocol.js';
import { scriptedModel, sqliteStorage, startWorker, type ModelPort, type ModelRequest, type ScriptedReply, type TaskWorker } from '../../src/index.js';
import { DEFAULT_CAPABILITIES } from '../../src/model/scripted-model.js';
import { clusterDatabase, clusterHost, clusterSkipReason } from '../support/cluster-hosts.js';
import { sqliteFile } from '../support/databases.js';
import { call, testHost, type TestHost } from '../support/host.js';
import type { HostProcess } from '../support/host-process.js';
import { SseClient } from '../support/sse-client.js';
import { taskModel, TaskToolLog, taskTools } from '../support/task-model.js';
import { removeNamespace } from '../support/task-stack.js';
import { useTempDirs } from '../support/workspace.js';

/**
 * Issue 25, one service for many users: alice, bob and an admin (JWTs, HS256) drive every route the
 * host serves. Bob, given alice's ids, is told exactly what he is told for ids that do not exist (404,
 * the same body with the id in it), sees none of her updates, and changes nothing of hers — whether
 * her session is open or closed, a sub-agent's, a task's, or held by another host of a cluster; lists
 * show each user only their own; an admin sees and acts on everything. `ROUTES` has a row for every
 * route the app registers, and the first test fails when a route is added without one. The AI SDK's
 * own chat client (`AbstractChat`, what `useChat` wraps) is driven by two users at the end.
 */

const SECRET = 'cross-user-test-secret-0123456789abcdef';

function token(sub: string, roles?: string[]): Promise<string> {
  return new SignJWT({ sub, ...(roles && { roles }) })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET));
}

const auth = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
const [ALICE, BOB, ADMIN] = await Promise.all([token('alice').then(auth), token('bob').then(auth), token('root', ['admin']).then(auth)]);

const unknown = (sessionId: string) => ({ error: { code: 'UnknownSession', message: `no session '${sessionId}'` } });

// ---------------------------------------------------------------------------------------------
// A model for every scenario at once: what it answers depends on the turn's own `cmd:` message,
// so sessions of different users can run on one host in any order.
// ---------------------------------------------------------------------------------------------

interface Gate {
  reached: Promise<void>;
  release(): void;
}

interface HeldGate extends Gate {
  opened: Promise<void>;
  markReached(): void;
}

const LEAD = 'You lead: hand the work to the worker.';
const AGENTS = {
  default: { switchTo: ['explorer'] },
  lead: { systemPrompt: LEAD, delegation: { agents: ['worker'] } },
  worker: { systemPrompt: 'You do the work you are given.' },
};

/**
 * `cmd:echo TEXT` answers `echo: TEXT`; `cmd:write` asks to write a file (an approval in ask mode);
 * `cmd:hold NAME` waits until `gate(NAME).release()` (or a cancel); `cmd:spawn` starts a `worker`
 * sub-agent on `cmd:child` and waits for it. After a tool result the turn ends with a line of text.
 */
class Script {
  private readonly gates = new Map<string, HeldGate>();
  private written = 0;

  readonly model: ModelPort = {
    capabilities: DEFAULT_CAPABILITIES,
    stream: (request, options) => scriptedModel([(r) => this.reply(r)]).stream(request, options),
  };

  gate(name: string): HeldGate {
    let gate = this.gates.get(name);
    if (!gate) {
      let markReached!: () => void;
      let release!: () => void;
      const reached = new Promise<void>((resolve) => (markReached = resolve));
      const opened = new Promise<void>((resolve) => (release = resolve));
      gate = { reached, opened, markReached, release };
      this.gates.set(name, gate);
    }
    return gate;
  }

  private async reply(request: ModelRequest): Promise<ScriptedReply> {
    const since = request.messages.slice(request.messages.findLastIndex((m) => m.role === 'assistant') + 1);
    const result = since.findLast((m) => m.role === 'tool');
    if (result?.role === 'tool') {
      if (result.toolName === 'spawn_agent') {
        const { agentId } = JSON.parse(result.content) as { agentId: string };
        return { text: '', toolCalls: [{ name: 'wait_agent', args: { agentId, timeoutMs: 60_000 } }] };
      }
      return { text: `after ${result.toolName}: ${result.status}` };
    }
    const command = since.findLast((m) => m.role === 'user' && m.text.startsWith('cmd:'));
    const text = command?.role === 'user' ? command.text.slice('cmd:'.length) : '';
    const [verb = '', ...rest] = text.split(' ');
    const argument = rest.join(' ');
    switch (verb) {
      case 'echo':
        return { text: `echo: ${argument}` };
      case 'write':
        return { text: 'writing', toolCalls: [{ name: 'write_file', args: { path: `note-${++this.written}.md`, content: 'x\n' } }] };
      case 'hold': {
        const gate = this.gate(argument);
        gate.markReached();
        await gate.opened;
        return { text: `released ${argument}` };
      }
      case 'spawn':
        return { text: 'delegating', toolCalls: [{ name: 'spawn_agent', args: { agent: 'worker', task: 'cmd:child' } }] };
      case 'child':
        return { text: 'child done' };
      default:
        return { text: 'ok' };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Every route, and what it is for a user who is not the owner.
// ---------------------------------------------------------------------------------------------

interface Ids {
  sessionId: string;
  turnId: string;
  toolCallId: string;
}

interface Req {
  method: string;
  path: string;
  body?: unknown;
  /** `POST /api/chat` with a user message creates the chat when its id is new: no "missing" answer to compare with. */
  createsWhenMissing?: boolean;
}

type Row =
  /** Reaches one session: another user's id must answer as a missing one. */
  | { route: string; scope: 'session'; requests(ids: Ids): Req[] }
  /** Reaches one task (only on a host with RabbitMQ). */
  | { route: string; scope: 'task'; requests(taskId: string): Req[] }
  /** Lists, or creates, the caller's own: checked by the list tests. */
  | { route: string; scope: 'own'; checkedBy: string }
  /** The same for every caller: no user's data (checked: every user gets the same answer). */
  | { route: string; scope: 'public'; request: Req }
  /** The operator's: every user is refused alike (403), an admin is served. */
  | { route: string; scope: 'admin'; request: Req };

const at = (ids: Ids) => `/sessions/${ids.sessionId}`;
const turnAt = (ids: Ids) => `${at(ids)}/turns/${ids.turnId}`;
const text = (value: string) => [{ type: 'text', text: value }];

const ROUTES: Row[] = [
  { route: 'GET /healthz', scope: 'public', request: { method: 'GET', path: '/healthz' } },
  { route: 'GET /agents', scope: 'public', request: { method: 'GET', path: '/agents' } },
  { route: 'GET /openapi.json', scope: 'public', request: { method: 'GET', path: '/openapi.json' } },
  { route: 'GET /inspect', scope: 'public', request: { method: 'GET', path: '/inspect' } },
  { route: 'GET /inspect/', scope: 'public', request: { method: 'GET', path: '/inspect/' } },
  { route: 'GET /inspect/assets/{name}', scope: 'public', request: { method: 'GET', path: '/inspect/assets/index.js' } },
  { route: 'GET /inspect/api/charts', scope: 'public', request: { method: 'GET', path: '/inspect/api/charts' } },
  // Issue 27: the host's figures, for its operator.
  { route: 'GET /metrics', scope: 'admin', request: { method: 'GET', path: '/metrics' } },

  { route: 'POST /sessions', scope: 'own', checkedBy: 'lists only the caller\'s own' },
  { route: 'GET /sessions', scope: 'own', checkedBy: 'lists only the caller\'s own' },
  { route: 'GET /inspect/api/sessions', scope: 'own', checkedBy: 'lists only the caller\'s own' },

  { route: 'GET /sessions/{sessionId}', scope: 'session', requests: (ids) => [{ method: 'GET', path: at(ids) }] },
  { route: 'GET /sessions/{sessionId}/messages', scope: 'session', requests: (ids) => [{ method: 'GET', path: `${at(ids)}/messages` }, { method: 'GET', path: `${at(ids)}/messages?after=0&limit=1` }] },
  { route: 'GET /sessions/{sessionId}/context', scope: 'session', requests: (ids) => [{ method: 'GET', path: `${at(ids)}/context` }] },
  { route: 'GET /sessions/{sessionId}/audit', scope: 'session', requests: (ids) => [{ method: 'GET', path: `${at(ids)}/audit` }] },
  { route: 'GET /sessions/{sessionId}/events', scope: 'session', requests: (ids) => [{ method: 'GET', path: `${at(ids)}/events` }, { method: 'GET', path: `${at(ids)}/events?after=0` }] },
  {
    route: 'POST /sessions/{sessionId}/turns',
    scope: 'session',
    requests: (ids) => [{ method: 'POST', path: `${at(ids)}/turns`, body: { clientRequestId: `intruder-${randomUUID()}`, input: text('cmd:echo intruder') } }],
  },
  // Issue 30: the seed's entry point and the session's runs.
  {
    route: 'POST /sessions/{sessionId}/messages',
    scope: 'session',
    requests: (ids) => [{ method: 'POST', path: `${at(ids)}/messages`, body: { clientRequestId: `intruder-${randomUUID()}`, input: text('cmd:echo intruder') } }],
  },
  { route: 'GET /sessions/{sessionId}/runs', scope: 'session', requests: (ids) => [{ method: 'GET', path: `${at(ids)}/runs` }, { method: 'GET', path: `${at(ids)}/runs?limit=1` }] },
  { route: 'GET /runs/{runId}', scope: 'own', checkedBy: "test/host/runs-api.test.ts: another principal's run answers 404 UnknownRun, as a missing one" },
  { route: 'GET /runs/{runId}/events', scope: 'own', checkedBy: "test/host/runs-api.test.ts: another principal's run's events answer 404, as a missing one's" },
  // `?wait=30`: a turn that is not the caller's is refused at once, not held until it ends.
  { route: 'GET /sessions/{sessionId}/turns/{turnId}', scope: 'session', requests: (ids) => [{ method: 'GET', path: turnAt(ids) }, { method: 'GET', path: `${turnAt(ids)}?wait=30` }] },
  { route: 'POST /sessions/{sessionId}/turns/{turnId}/cancel', scope: 'session', requests: (ids) => [{ method: 'POST', path: `${turnAt(ids)}/cancel` }] },
  {
    route: 'POST /sessions/{sessionId}/turns/{turnId}/permissions/{toolCallId}',
    scope: 'session',
    requests: (ids) => ['allow_once', 'deny'].map((decision) => ({ method: 'POST', path: `${turnAt(ids)}/permissions/${ids.toolCallId}`, body: { decision } })),
  },
  { route: 'PUT /sessions/{sessionId}/permission-mode', scope: 'session', requests: (ids) => [{ method: 'PUT', path: `${at(ids)}/permission-mode`, body: { mode: 'auto' } }] },
  { route: 'PUT /sessions/{sessionId}/agent', scope: 'session', requests: (ids) => [{ method: 'PUT', path: `${at(ids)}/agent`, body: { agent: 'explorer' } }] },
  { route: 'POST /sessions/{sessionId}/agent-messages', scope: 'session', requests: (ids) => [{ method: 'POST', path: `${at(ids)}/agent-messages`, body: { from: 'bob', text: 'psst' } }] },
  { route: 'POST /sessions/{sessionId}/compact', scope: 'session', requests: (ids) => [{ method: 'POST', path: `${at(ids)}/compact` }] },
  { route: 'POST /sessions/{sessionId}/rewind', scope: 'session', requests: (ids) => [{ method: 'POST', path: `${at(ids)}/rewind`, body: { compactionId: 'cmp_nope' } }] },
  {
    route: 'POST /api/chat',
    scope: 'session',
    requests: (ids) => [
      // An approval answer (what `addToolApprovalResponse` sends) reaches an existing chat only.
      {
        method: 'POST',
        path: '/api/chat',
        body: {
          id: ids.sessionId,
          messages: [
            {
              id: 'm-answer',
              role: 'assistant',
              parts: [{ type: 'tool-write_file', toolCallId: ids.toolCallId, state: 'approval-responded', input: {}, approval: { id: approvalId(ids.turnId, ids.toolCallId), approved: true } }],
            },
          ],
        },
      },
      // A user's message: a new chat id creates the chat, an existing one that is not the caller's is not there.
      { method: 'POST', path: '/api/chat', createsWhenMissing: true, body: { id: ids.sessionId, messages: [{ id: `u-${randomUUID()}`, role: 'user', parts: text('cmd:echo intruder') }] } },
      { method: 'POST', path: '/api/chat?agent=explorer', createsWhenMissing: true, body: { id: ids.sessionId, messages: [{ id: `u-${randomUUID()}`, role: 'user', parts: text('cmd:echo intruder') }] } },
    ],
  },
  // 204 for a chat with no running turn, a missing one and another user's alike.
  { route: 'GET /api/chat/{id}/stream', scope: 'session', requests: (ids) => [{ method: 'GET', path: `/api/chat/${ids.sessionId}/stream` }] },
  { route: 'GET /inspect/api/sessions/{sessionId}/links', scope: 'session', requests: (ids) => [{ method: 'GET', path: `/inspect/api/sessions/${ids.sessionId}/links` }] },
  {
    route: 'GET /inspect/api/sessions/{sessionId}/stream',
    scope: 'session',
    requests: (ids) => [{ method: 'GET', path: `/inspect/api/sessions/${ids.sessionId}/stream` }, { method: 'GET', path: `/inspect/api/sessions/${ids.sessionId}/stream?after=0` }],
  },

  { route: 'POST /tasks', scope: 'own', checkedBy: 'the task tests: a task id another user took is 409 TaskExists' },
  { route: 'GET /tasks/{taskId}', scope: 'task', requests: (taskId) => [{ method: 'GET', path: `/tasks/${taskId}` }] },
  { route: 'GET /tasks/{taskId}/events', scope: 'task', requests: (taskId) => [{ method: 'GET', path: `/tasks/${taskId}/events` }, { method: 'GET', path: `/tasks/${taskId}/events?after=0&limit=1` }] },
  { route: 'POST /tasks/{taskId}/pause', scope: 'task', requests: (taskId) => [{ method: 'POST', path: `/tasks/${taskId}/pause` }] },
  { route: 'POST /tasks/{taskId}/resume', scope: 'task', requests: (taskId) => [{ method: 'POST', path: `/tasks/${taskId}/resume` }] },
  { route: 'POST /tasks/{taskId}/abort', scope: 'task', requests: (taskId) => [{ method: 'POST', path: `/tasks/${taskId}/abort` }] },
];

const sessionRows = ROUTES.filter((row): row is Extract<Row, { scope: 'session' }> => row.scope === 'session');
const taskRows = ROUTES.filter((row): row is Extract<Row, { scope: 'task' }> => row.scope === 'task');

/** Every route the app registers, as `METHOD /path/{param}`: built with nothing behind it, only to read its routes. */
function servedRoutes(): string[] {
  const stub = { inspector: { assets: '/nonexistent' }, tasks: {} } as unknown as HostContext;
  const app = createApp(stub, { auth: authentication({ token: 'x', jwt: null, authenticate: null }), corsOrigin: null, hosts: { bound: '127.0.0.1', allowed: [] } });
  const routes = app.routes.filter((route) => route.method !== 'ALL').map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`);
  return [...new Set(routes)].sort();
}

// ---------------------------------------------------------------------------------------------

interface Answer {
  status: number;
  /** The media type, without parameters; `stream` for an event stream (closed once its headers came). */
  type: string;
  body: unknown;
}

/** One request over real HTTP; an event stream is closed as soon as it is answered. */
async function send(h: { url: string }, request: Req, headers: Record<string, string>): Promise<Answer> {
  const controller = new AbortController();
  const response = await fetch(h.url + request.path, {
    method: request.method,
    headers: { ...headers, ...(request.body !== undefined && { 'content-type': 'application/json' }) },
    ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
    signal: controller.signal,
    redirect: 'manual',
  });
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!;
  if (type === 'text/event-stream') {
    controller.abort();
    return { status: response.status, type: 'stream', body: null };
  }
  const body = await response.text();
  return { status: response.status, type, body: type === 'application/json' ? JSON.parse(body) : body };
}

const withId = (request: Req, from: Ids, to: Ids): Req => JSON.parse(JSON.stringify(request).replaceAll(from.sessionId, to.sessionId)) as Req;

/**
 * Bob (or whoever `intruder` is) sends every session route for the owner's `ids`: each answer is the one
 * a missing session gets, the id in it being the one asked for; nothing is streamed.
 */
async function expectNotThere(h: { url: string }, ids: Ids, intruder: Record<string, string>): Promise<number> {
  const missing: Ids = { ...ids, sessionId: `ses_missing_${randomUUID()}` };
  let checked = 0;
  for (const row of sessionRows) {
    const requests = row.requests(ids);
    for (const [index, request] of requests.entries()) {
      const label = `${row.route} #${index}`;
      const intruding = await send(h, request, intruder);
      if (request.createsWhenMissing) {
        expect({ label, ...intruding }).toEqual({ label, status: 404, type: 'application/json', body: unknown(ids.sessionId) });
      } else {
        const absent = await send(h, withId(request, ids, missing), intruder);
        expect(absent.type, label).not.toBe('stream');
        if (absent.status !== 204) expect({ label, ...absent }).toEqual({ label, status: 404, type: 'application/json', body: unknown(missing.sessionId) });
        const expected = JSON.parse(JSON.stringify(absent).replaceAll(missing.sessionId, ids.sessionId)) as Answer;
        expect({ label, ...intruding }).toEqual({ label, ...expected });
      }
      checked += 1;
    }
  }
  return checked;
}

/**
 * Requests on the caller's own session that name someone else's turn and tool call (`ids`) answer as
 * those with ids nobody has: the turn is looked for in the caller's session only.
 */
async function expectSameAsMadeUp(h: TestHost, ids: Ids, caller: Record<string, string>): Promise<void> {
  const madeUp: Ids = { ...ids, turnId: `turn_made_up_${randomUUID()}`, toolCallId: `call_made_up_${randomUUID()}` };
  const swap = (value: unknown, from: Ids, to: Ids) =>
    JSON.parse(JSON.stringify(value).replaceAll(approvalId(from.turnId, from.toolCallId), approvalId(to.turnId, to.toolCallId)).replaceAll(from.turnId, to.turnId).replaceAll(from.toolCallId, to.toolCallId)) as unknown;
  let checked = 0;
  for (const row of sessionRows) {
    for (const [index, request] of row.requests(ids).entries()) {
      if (!JSON.stringify(request).includes(ids.turnId)) continue;
      const label = `${row.route} #${index}`;
      const foreign = await send(h, request, caller);
      const made = await send(h, swap(request, ids, madeUp) as Req, caller);
      expect(made.status, label).toBeGreaterThanOrEqual(400);
      expect({ label, ...foreign }).toEqual({ label, ...(swap(made, madeUp, ids) as Answer) });
      checked += 1;
    }
  }
  expect(checked).toBeGreaterThanOrEqual(5);
}

/** The admin reaches every session route for `ids`: no answer says the session is not there. */
async function expectReachable(h: { url: string }, ids: Ids, caller: Record<string, string>): Promise<void> {
  for (const row of sessionRows) {
    for (const [index, request] of row.requests(ids).entries()) {
      const answer = await send(h, request, caller);
      expect({ route: `${row.route} #${index}`, code: (answer.body as { error?: { code?: string } } | null)?.error?.code ?? null }).not.toEqual({
        route: `${row.route} #${index}`,
        code: 'UnknownSession',
      });
      expect(answer.status, `${row.route} #${index}`).toBeLessThan(500);
    }
  }
}

/** What alice has in a session: its snapshot, stored row, conversation, turns and audit. */
async function stateOf(h: TestHost, sessionId: string) {
  return {
    snapshot: (await h.call('GET', `/sessions/${sessionId}`, undefined, ALICE)).body,
    row: await h.storage.getSession(sessionId),
    messages: await h.storage.listMessages(sessionId),
    turns: await h.storage.listTurns(sessionId),
    audit: (await h.call('GET', `/sessions/${sessionId}/audit`, undefined, ALICE)).body,
  };
}

// ---------------------------------------------------------------------------------------------

const tempDir = useTempDirs('turnchart-cross-user-');
let script: Script;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(extra: Parameters<typeof testHost>[2] = {}, db = sqliteFile()): Promise<TestHost> {
  script = new Script();
  const h = await testHost(db, script.model, { jwt: { keys: { secret: SECRET } }, runtime: { agents: AGENTS }, ...extra });
  cleanups.push(() => db.drop(), () => h.close());
  return h;
}

async function sessionAs(h: TestHost, caller: Record<string, string>, body: Record<string, unknown> = {}): Promise<string> {
  const created = await h.call('POST', '/sessions', body, caller);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.sessionId as string;
}

async function turnAs(h: TestHost, caller: Record<string, string>, sessionId: string, input: string): Promise<string> {
  const accepted = await h.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: randomUUID(), input: text(input) }, caller);
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
  return accepted.body.turnId as string;
}

async function finishedAs(h: TestHost, caller: Record<string, string>, sessionId: string, turnId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const state = await h.call('GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`, undefined, caller);
    expect(state.status).toBe(200);
    if (state.body.status !== 'running' && state.body.status !== 'queued') return state.body;
  }
}

async function events(h: TestHost, route: string, caller: Record<string, string>): Promise<SseClient> {
  const client = await SseClient.connect(h.url + route, caller);
  expect(client.status, route).toBe(200);
  cleanups.push(() => client.close());
  return client;
}

describe('one host, many users (issue 25)', () => {
  it('has a row in the route table for every route the app serves, and for every route of /openapi.json', async () => {
    expect(servedRoutes()).toEqual(ROUTES.map((row) => row.route).sort());
    const h = await open();
    const doc = (await h.call('GET', '/openapi.json', undefined, ALICE)).body as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([template, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${template}`));
    expect(documented.length).toBeGreaterThan(15);
    expect(ROUTES.map((row) => row.route)).toEqual(expect.arrayContaining(documented));
  });

  it('answers bob, for each of alice\'s ids on every route, as for an id that does not exist, and changes nothing of hers; an admin sees and acts on both', async () => {
    const h = await open();
    // Alice: one session waiting for her approval, one whose turn runs (its model call held).
    const asking = await sessionAs(h, ALICE, { permissionMode: 'ask' });
    const asked = await events(h, `/sessions/${asking}/events`, ALICE);
    const askingTurn = await turnAs(h, ALICE, asking, 'cmd:write');
    const request = await asked.nextUpdate('permission_requested');
    const toolCallId = request.update.toolCallId as string;
    const running = await sessionAs(h, ALICE);
    const runningTurn = await turnAs(h, ALICE, running, 'cmd:hold alice');
    await script.gate('alice').reached;
    // Bob's own, finished.
    const bobs = await sessionAs(h, BOB);
    const bobsTurn = await turnAs(h, BOB, bobs, 'cmd:echo mine');
    expect(await finishedAs(h, BOB, bobs, bobsTurn)).toMatchObject({ status: 'completed' });

    const aliceIds: Ids[] = [
      { sessionId: asking, turnId: askingTurn, toolCallId },
      { sessionId: running, turnId: runningTurn, toolCallId: 'call_none' },
    ];
    const before = await Promise.all(aliceIds.map((ids) => stateOf(h, ids.sessionId)));
    let checked = 0;
    for (const ids of aliceIds) checked += await expectNotThere(h, ids, BOB);
    expect(checked).toBeGreaterThan(2 * sessionRows.length);
    // Bob's own ids with alice's session: still not there (the session is what is checked, not the turn).
    for (const ids of aliceIds) checked += await expectNotThere(h, { ...ids, turnId: bobsTurn }, BOB);

    // Bob's own session with alice's turn and tool call ids: answered as for ids made up (the turn is looked for in his session only).
    await expectSameAsMadeUp(h, { sessionId: bobs, turnId: askingTurn, toolCallId }, BOB);
    await expectSameAsMadeUp(h, { sessionId: bobs, turnId: runningTurn, toolCallId }, BOB);

    // Nothing of alice's moved: her approval still waits, her turn still runs, her mode, agent, conversation and audit are as they were.
    expect(await Promise.all(aliceIds.map((ids) => stateOf(h, ids.sessionId)))).toEqual(before);
    expect(before[0]!.snapshot).toMatchObject({ permissionMode: 'ask', runtime: { kind: 'running', pendingApproval: { toolCallId } } });
    expect((await h.call('GET', `/sessions/${running}/turns/${runningTurn}`, undefined, ALICE)).body).toEqual({ turnId: runningTurn, status: 'running' });
    expect(asked.updates.filter((u) => u.sequence > request.sequence)).toEqual([]);

    // The admin sees both users' sessions and acts on alice's: answers her approval, cancels her running turn.
    expect((await h.call('GET', `/sessions/${asking}`, undefined, ADMIN)).status).toBe(200);
    expect((await h.call('GET', `/sessions/${bobs}`, undefined, ADMIN)).status).toBe(200);
    expect(await h.call('POST', `/sessions/${asking}/turns/${askingTurn}/permissions/${toolCallId}`, { decision: 'allow_once' }, ADMIN)).toEqual({ status: 200, body: { ok: true } });
    expect(await finishedAs(h, ALICE, asking, askingTurn)).toMatchObject({ status: 'completed', outcome: { finalText: 'after write_file: success' } });
    expect(await h.call('POST', `/sessions/${running}/turns/${runningTurn}/cancel`, undefined, ADMIN)).toEqual({ status: 200, body: { ok: true } });
    expect(await finishedAs(h, ALICE, running, runningTurn)).toMatchObject({ status: 'cancelled' });
    // And every route, on alice's session and on bob's, is there for the admin (whatever else it answers).
    await expectReachable(h, aliceIds[0]!, ADMIN);
    await expectReachable(h, { sessionId: bobs, turnId: bobsTurn, toolCallId: 'call_none' }, ADMIN);
    expect((await h.storage.getSession(asking))?.permissionMode).toBe('auto');
  });

  it('answers bob as for a missing id for alice\'s session closed here too, and opens nothing for him', async () => {
    const h = await open();
    const closed = await sessionAs(h, ALICE);
    const turnId = await turnAs(h, ALICE, closed, 'cmd:echo then close');
    await finishedAs(h, ALICE, closed, turnId);
    await h.runtime.openHandle(closed)!.close();
    expect(h.runtime.openHandle(closed)?.isOpen ?? false).toBe(false);
    const before = { row: await h.storage.getSession(closed), messages: await h.storage.listMessages(closed), turns: await h.storage.listTurns(closed) };

    await expectNotThere(h, { sessionId: closed, turnId, toolCallId: 'call_none' }, BOB);
    // What was read to refuse him opened nothing: the session is still closed, and as it was.
    expect(h.runtime.openHandle(closed)?.isOpen ?? false).toBe(false);
    expect({ row: await h.storage.getSession(closed), messages: await h.storage.listMessages(closed), turns: await h.storage.listTurns(closed) }).toEqual(before);
    // Its owner opens it again as ever.
    expect((await h.call('GET', `/sessions/${closed}`, undefined, ALICE)).status).toBe(200);
  });

  it('lists only the caller\'s own sessions (GET /sessions, paged, and the inspector\'s live list); the admin\'s lists show all, with their principal', async () => {
    const h = await open();
    const alices = [await sessionAs(h, ALICE), await sessionAs(h, ALICE)];
    const bobs = await sessionAs(h, BOB);
    const admins = await sessionAs(h, ADMIN);
    expect((await h.storage.getSession(admins))?.principal).toBe('root');

    const list = async (caller: Record<string, string>, query = '') => {
      const page = await h.call('GET', `/sessions${query}`, undefined, caller);
      expect(page.status).toBe(200);
      return page.body as { sessions: { sessionId: string; principal: string }[]; nextCursor: string | null };
    };
    const pairs = (sessions: { sessionId: string; principal: string }[]) => sessions.map((s) => `${s.principal}:${s.sessionId}`).sort();
    expect(pairs((await list(ALICE)).sessions)).toEqual(alices.map((id) => `alice:${id}`).sort());
    expect(pairs((await list(BOB)).sessions)).toEqual([`bob:${bobs}`]);
    expect(pairs((await list(ADMIN)).sessions)).toEqual([...alices.map((id) => `alice:${id}`), `bob:${bobs}`, `root:${admins}`].sort());
    // Paged: alice's pages hold her sessions and end there.
    const first = await list(ALICE, '?limit=1');
    const second = await list(ALICE, `?limit=1&cursor=${encodeURIComponent(first.nextCursor!)}`);
    const third = second.nextCursor ? await list(ALICE, `?limit=1&cursor=${encodeURIComponent(second.nextCursor)}`) : { sessions: [], nextCursor: null };
    expect(pairs([...first.sessions, ...second.sessions, ...third.sessions])).toEqual(alices.map((id) => `alice:${id}`).sort());
    expect(third.nextCursor).toBeNull();

    // The inspector's list: the same, then live changes only for what the listener may see.
    const watch = async (caller: Record<string, string>) => {
      const stream = await events(h, '/inspect/api/sessions', caller);
      const listed = JSON.parse((await stream.next((e) => e.event === 'list')).data) as { sessions: SessionListEntry[] };
      return { stream, listed: listed.sessions.map((s) => `${s.principal}:${s.sessionId}`).sort() };
    };
    const alicePage = await watch(ALICE);
    const bobPage = await watch(BOB);
    const adminPage = await watch(ADMIN);
    expect(alicePage.listed).toEqual(alices.map((id) => `alice:${id}`).sort());
    expect(bobPage.listed).toEqual([`bob:${bobs}`]);
    expect(adminPage.listed).toEqual([...alices.map((id) => `alice:${id}`), `bob:${bobs}`, `root:${admins}`].sort());

    const changed = (page: { stream: SseClient }, sessionId: string) =>
      page.stream.next((e) => e.event === 'message' && (JSON.parse(e.data) as SessionListEntry).sessionId === sessionId);
    // A session alice creates now, and runs a turn in: the admin's page hears of it.
    const later = await sessionAs(h, ALICE);
    await finishedAs(h, ALICE, later, await turnAs(h, ALICE, later, 'cmd:echo later'));
    expect((JSON.parse((await changed(adminPage, later)).data) as SessionListEntry).principal).toBe('alice');
    await changed(alicePage, later);
    // Then bob runs one: once his page has that, anything of alice's sent before it would have come too.
    await finishedAs(h, BOB, bobs, await turnAs(h, BOB, bobs, 'cmd:echo bob'));
    await changed(bobPage, bobs);
    const seen = (page: { stream: SseClient }) => page.stream.events.map((e) => e.data).join('\n');
    for (const id of [...alices, later, admins]) expect(seen(bobPage)).not.toContain(id);
    expect(seen(alicePage)).not.toContain(bobs);
    expect(seen(alicePage)).not.toContain(admins);
  });

  it('answers every user the same on the routes that hold no user\'s data', async () => {
    const h = await open();
    await sessionAs(h, ALICE);
    for (const row of ROUTES) {
      if (row.scope !== 'public') continue;
      const answers = [await send(h, row.request, ALICE), await send(h, row.request, BOB), await send(h, row.request, ADMIN)];
      expect(answers[1], row.route).toEqual(answers[0]);
      expect(answers[2], row.route).toEqual(answers[0]);
    }
  });

  it('refuses every user alike on the operator\'s routes, and serves the admin', async () => {
    const h = await open();
    await sessionAs(h, ALICE);
    for (const row of ROUTES) {
      if (row.scope !== 'admin') continue;
      const [alice, bob, admin] = [await send(h, row.request, ALICE), await send(h, row.request, BOB), await send(h, row.request, ADMIN)];
      expect(alice, row.route).toMatchObject({ status: 403 });
      expect(bob, row.route).toEqual(alice);
      expect(admin.status, row.route).toBe(200);
    }
  });

  it('gives a sub-agent\'s session to its parent\'s owner: alice sees it, bob is told it is not there', async () => {
    const h = await open();
    const parent = await sessionAs(h, ALICE, { agent: 'lead', permissionMode: 'auto' });
    const turnId = await turnAs(h, ALICE, parent, 'cmd:spawn');
    expect(await finishedAs(h, ALICE, parent, turnId)).toMatchObject({ status: 'completed', outcome: { finalText: 'after wait_agent: success' } });

    const links = await h.call('GET', `/inspect/api/sessions/${parent}/links`, undefined, ALICE);
    expect(links.status).toBe(200);
    const [child] = links.body.children as { sessionId: string; agent: string }[];
    expect(child).toMatchObject({ agent: 'worker' });
    const childId = child!.sessionId;
    expect((await h.storage.getSession(childId))?.principal).toBe('alice');
    expect((await h.call('GET', `/inspect/api/sessions/${childId}/links`, undefined, ALICE)).body).toEqual({ parent: { sessionId: parent }, children: [] });
    const childTurn = (await h.storage.listTurns(childId))[0]!.id;
    expect(await finishedAs(h, ALICE, childId, childTurn)).toMatchObject({ status: 'completed', outcome: { finalText: 'child done' } });

    const before = await stateOf(h, childId);
    await expectNotThere(h, { sessionId: childId, turnId: childTurn, toolCallId: 'call_none' }, BOB);
    await expectNotThere(h, { sessionId: parent, turnId, toolCallId: 'call_none' }, BOB);
    expect(await stateOf(h, childId)).toEqual(before);

    const ids = (caller: Record<string, string>) => h.call('GET', '/sessions', undefined, caller).then((r) => (r.body.sessions as { sessionId: string; principal: string }[]).map((s) => `${s.principal}:${s.sessionId}`).sort());
    expect(await ids(ALICE)).toEqual([`alice:${parent}`, `alice:${childId}`].sort());
    expect(await ids(BOB)).toEqual([]);
    expect(await ids(ADMIN)).toEqual([`alice:${parent}`, `alice:${childId}`].sort());
    expect((await h.call('GET', `/sessions/${childId}`, undefined, ADMIN)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// The AI SDK's own chat client, as `useChat` runs it, for two users.
// ---------------------------------------------------------------------------------------------

/** `useChat`'s state without React: plain arrays, replaced on every change as React's state would be. */
class ArrayChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  constructor(public messages: UIMessage[] = []) {}
  pushMessage = (message: UIMessage) => void (this.messages = [...this.messages, message]);
  popMessage = () => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (index: number, message: UIMessage) => void (this.messages = this.messages.map((m, i) => (i === index ? message : m)));
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The AI SDK's `AbstractChat` (what `useChat` wraps), on a `DefaultChatTransport` that sends the user's bearer token. */
class UserChat extends AbstractChat<UIMessage> {
  /** The status of every response the transport received, in order. */
  readonly statuses: number[];
  readonly errors: Error[];
  /** Resolves when the first response's headers have come. */
  readonly responded: Promise<void>;

  constructor(url: string, id: string, headers: Record<string, string>) {
    const statuses: number[] = [];
    const errors: Error[] = [];
    let markResponded!: () => void;
    const responded = new Promise<void>((resolve) => (markResponded = resolve));
    const init: ChatInit<UIMessage> = {
      id,
      transport: new DefaultChatTransport({
        api: `${url}/api/chat`,
        headers,
        fetch: async (input, request) => {
          const response = await fetch(input, request);
          statuses.push(response.status);
          markResponded();
          return response;
        },
      }),
      onError: (error) => errors.push(error),
    };
    super({ ...init, state: new ArrayChatState() });
    this.statuses = statuses;
    this.errors = errors;
    this.responded = responded;
  }

  texts(): string[] {
    return this.messages.flatMap((m) => m.parts.flatMap((part) => (part.type === 'text' ? [`${m.role}: ${part.text}`] : [])));
  }
}

describe('useChat clients of two users on one host', () => {
  it('streams each user\'s chat to them alone; bob\'s client on alice\'s chat id gets a 404 error, and her chat is untouched', async () => {
    const h = await open();
    const alice = new UserChat(h.url, 'chat-alice', ALICE);
    const bob = new UserChat(h.url, 'chat-bob', BOB);
    await Promise.all([alice.sendMessage({ text: 'cmd:echo hello from alice' }), bob.sendMessage({ text: 'cmd:echo hello from bob' })]);
    expect(alice.status).toBe('ready');
    expect(alice.texts()).toEqual(['user: cmd:echo hello from alice', 'assistant: echo: hello from alice']);
    expect(bob.texts()).toEqual(['user: cmd:echo hello from bob', 'assistant: echo: hello from bob']);
    expect((await h.storage.getSession('chat-alice'))?.principal).toBe('alice');
    expect((await h.storage.getSession('chat-bob'))?.principal).toBe('bob');

    // Bob's client, pointed at alice's chat.
    const before = await stateOf(h, 'chat-alice');
    const intruder = new UserChat(h.url, 'chat-alice', BOB);
    await intruder.sendMessage({ text: 'cmd:echo let me in' });
    expect(intruder.status).toBe('error');
    expect(intruder.statuses).toEqual([404]);
    expect(JSON.parse(intruder.error!.message)).toEqual(unknown('chat-alice'));
    expect(intruder.errors).toHaveLength(1);
    expect(intruder.texts()).toEqual(['user: cmd:echo let me in']);
    expect(await stateOf(h, 'chat-alice')).toEqual(before);

    // While alice's next turn runs, bob's client resuming her chat gets nothing (204, as for a chat with no turn running)…
    const sent = alice.sendMessage({ text: 'cmd:hold chat' });
    await script.gate('chat').reached;
    const resumer = new UserChat(h.url, 'chat-alice', BOB);
    await resumer.resumeStream();
    expect(resumer.statuses).toEqual([204]);
    expect(resumer.status).toBe('ready');
    expect(resumer.messages).toEqual([]);
    // … while alice's second tab resumes the turn's stream and sees it end.
    const tab = new UserChat(h.url, 'chat-alice', ALICE);
    const resumed = tab.resumeStream();
    await tab.responded;
    script.gate('chat').release();
    await Promise.all([sent, resumed]);
    expect(alice.texts().slice(-1)).toEqual(['assistant: released chat']);
    expect(tab.statuses).toEqual([200]);
    expect(tab.texts()).toEqual(['assistant: released chat']);
    // Bob's own chat saw none of it.
    expect(bob.texts()).toEqual(['user: cmd:echo hello from bob', 'assistant: echo: hello from bob']);
    expect((await h.storage.listTurns('chat-bob')).length).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
// Tasks: stored with their submitter, on a host with RabbitMQ.
// ---------------------------------------------------------------------------------------------

const AMQP_URL = process.env.TEST_AMQP_URL;
const NO_BROKER = AMQP_URL ? null : 'no RabbitMQ answers (TEST_AMQP_URL unset and nothing on 127.0.0.1:5672)';
if (NO_BROKER) console.log(`cross-user task tests skipped: ${NO_BROKER}`);

describe.skipIf(NO_BROKER !== null)('tasks of two users on one host (RabbitMQ)', { timeout: 60_000 }, () => {
  it('answers bob, for alice\'s task on every task route, as for a task that does not exist; her task id is not his to take; the admin acts on it', async () => {
    const namespace = `tc-cross-user-${randomUUID()}`;
    const db = sqliteFile();
    // Sessions and tasks in one database, as `turnchart serve` and `turnchart worker` keep them (a task row names its session).
    const tasksFile = db.file;
    cleanups.push(() => removeNamespace(namespace).catch(() => undefined));
    const h = await open({ amqpUrl: AMQP_URL!, amqpNamespace: namespace, taskStorage: sqliteTaskStorage({ filename: tasksFile }) }, db);
    const log = new TaskToolLog();
    // The worker's task storage, telling when alice's task is stored RUNNING (the runner records it beside the first turn).
    let markRunning!: () => void;
    const stored = sqliteTaskStorage({ filename: tasksFile });
    const runningStored = new Promise<void>((resolve) => (markRunning = resolve));
    const tasks = new Proxy(stored, {
      get(target, property) {
        if (property === 'appendTaskEvent') {
          return async (...args: Parameters<TaskStorage['appendTaskEvent']>) => {
            const row = await target.appendTaskEvent(...args);
            if (args[0] === 'task-alice' && args[2]?.state === 'RUNNING') markRunning();
            return row;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const worker: TaskWorker = await startWorker({
      sessions: sqliteStorage({ filename: db.file }),
      tasks,
      amqpUrl: AMQP_URL!,
      namespace,
      model: taskModel(),
      tools: taskTools(log),
      warn: () => undefined,
    });
    cleanups.push(() => worker.close());

    const doc = (await h.call('GET', '/openapi.json', undefined, ALICE)).body as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([template, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${template}`));
    expect(documented.filter((route) => route.includes('/tasks'))).toHaveLength(6);
    expect(ROUTES.map((row) => row.route)).toEqual(expect.arrayContaining(documented));

    const submitted = await h.call('POST', '/tasks', { taskId: 'task-alice', prompts: ['block'] }, ALICE);
    expect(submitted.status).toBe(201);
    await Promise.all([log.untilBlocked(1), runningStored]);
    const view = async (caller = ALICE) => (await h.call('GET', '/tasks/task-alice', undefined, caller)).body;
    expect(await view()).toMatchObject({ taskId: 'task-alice', state: 'RUNNING', control: null });
    const agentSession = (await view()).agentSessionId as string;
    expect((await h.storage.getSession(agentSession))?.principal).toBe('alice');

    const missingTask = `task-missing-${randomUUID()}`;
    for (const row of taskRows) {
      for (const [index, request] of row.requests('task-alice').entries()) {
        const label = `${row.route} #${index}`;
        const intruding = await send(h, request, BOB);
        const absent = await send(h, JSON.parse(JSON.stringify(request).replaceAll('task-alice', missingTask)) as Req, BOB);
        expect({ label, ...absent }).toEqual({ label, status: 404, type: 'application/json', body: { error: { code: 'UnknownTask', message: `no task '${missingTask}'` } } });
        expect({ label, ...intruding }).toEqual({ label, status: 404, type: 'application/json', body: { error: { code: 'UnknownTask', message: "no task 'task-alice'" } } });
      }
    }
    // Her id is taken: bob may not submit under it, and is not shown her task for trying.
    const taken = await h.call('POST', '/tasks', { taskId: 'task-alice', prompts: ['steps 1'] }, BOB);
    expect(taken).toEqual({ status: 409, body: { error: { code: 'TaskExists', message: "task id 'task-alice' is taken; submit under another id" } } });
    // The task's session is hers too.
    await expectNotThere(h, { sessionId: agentSession, turnId: 'turn_none', toolCallId: 'call_none' }, BOB);
    // Nothing bob asked for was recorded or carried out: no control on the task, its turn still blocked in its tool.
    expect(await view()).toMatchObject({ state: 'RUNNING', control: null });
    const changes = ((await h.call('GET', '/tasks/task-alice/events', undefined, ALICE)).body.events as { payload: { event_type: string; data: { to_state?: string } } }[])
      .filter((e) => e.payload.event_type === 'state_changed')
      .map((e) => e.payload.data.to_state);
    expect(changes).toEqual(['RUNNING']);
    expect(log.blocked.map((b) => b.signal.aborted)).toEqual([false]);

    // Bob's own task is his; alice does not see it.
    expect((await h.call('POST', '/tasks', { taskId: 'task-bob', prompts: ['steps 1'] }, BOB)).status).toBe(201);
    expect((await h.call('GET', '/tasks/task-bob', undefined, ALICE)).status).toBe(404);
    expect((await h.call('GET', '/tasks/task-bob', undefined, ADMIN)).status).toBe(200);

    // The admin sees alice's task and acts on it.
    expect(await view(ADMIN)).toMatchObject({ taskId: 'task-alice', state: 'RUNNING' });
    const aborted = await h.call('POST', '/tasks/task-alice/abort', undefined, ADMIN);
    expect(aborted).toMatchObject({ status: 202, body: { taskId: 'task-alice', control: 'abort' } });
    // The worker carries it out: the task's blocked tool call is aborted.
    const { signal } = log.blocked[0]!;
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  });
});

// ---------------------------------------------------------------------------------------------
// A cluster: bob on one host, alice's session held by the other.
// ---------------------------------------------------------------------------------------------

describe.skipIf(clusterSkipReason !== null)('two host processes in a cluster (PostgreSQL + RabbitMQ)', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  afterEach(async () => {
    for (const running of hosts.splice(0)) {
      running.kill('SIGTERM');
      await running.exited;
    }
  });

  it('answers bob on host B, for alice\'s session held by host A, as for a missing id; routes alice\'s and the admin\'s requests to A', async () => {
    const db = clusterDatabase();
    cleanups.push(() => db.drop());
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace, extra: ['--jwt-secret', SECRET] };
    const write = { text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'cluster.md', content: 'x\n' } }] };
    const [a, b] = await Promise.all([clusterHost({ ...common, name: 'a', replies: [write, { text: 'wrote cluster.md' }] }), clusterHost({ ...common, name: 'b', replies: [] })]);
    hosts.push(a, b);

    const created = await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' }, ALICE);
    expect(created.status).toBe(201);
    const sessionId = created.body.sessionId as string;
    const stream = await SseClient.connect(`${a.url}/sessions/${sessionId}/events`, ALICE);
    cleanups.push(() => stream.close());
    const turn = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'c1', input: text('write it') }, ALICE);
    expect(turn.status).toBe(202);
    const turnId = turn.body.turnId as string;
    const asked = await stream.nextUpdate('permission_requested');
    const toolCallId = asked.update.toolCallId as string;
    const snapshotOnA = async () => (await call(a.url, 'GET', `/sessions/${sessionId}`, undefined, ALICE)).body;
    const before = await snapshotOnA();

    await expectNotThere(b, { sessionId, turnId, toolCallId }, BOB);
    expect(await snapshotOnA()).toEqual(before);
    expect(stream.updates.filter((u) => u.sequence > asked.sequence)).toEqual([]);

    // Through B, alice's and the admin's requests reach the session A holds.
    expect(await call(b.url, 'GET', `/sessions/${sessionId}`, undefined, ALICE)).toEqual({ status: 200, body: before });
    expect(await call(b.url, 'POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, { decision: 'allow_once' }, ADMIN)).toEqual({ status: 200, body: { ok: true } });
    for (;;) {
      const state = await call(b.url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`, undefined, ALICE);
      expect(state.status).toBe(200);
      if (state.body.status === 'running') continue;
      expect(state.body).toMatchObject({ status: 'completed', outcome: { finalText: 'wrote cluster.md' } });
      break;
    }
    expect((await call(b.url, 'GET', '/sessions', undefined, BOB)).body.sessions).toEqual([]);
    expect((await call(b.url, 'GET', '/sessions', undefined, ADMIN)).body.sessions).toEqual([expect.objectContaining({ sessionId, principal: 'alice' })]);
  });
});
