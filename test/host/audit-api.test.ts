import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AuditEntry } from '../../src/index.js';
import { argumentsHash } from '../../src/runtime/tool-audit.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { answerApproval, fold, toolParts, UiChatClient, userMessage } from '../support/ui-chat-client.js';

const tools = [
  defineTool({
    name: 'lookup',
    description: 'Look a key up',
    effect: 'read',
    input: z.object({ key: z.string() }),
    execute: async (args) => ({ status: 'succeeded', content: `value of ${args.key}` }),
  }),
  defineTool({
    name: 'save',
    description: 'Save a file',
    effect: 'write',
    input: z.object({ path: z.string() }),
    authorize: (args) => (args.path.startsWith('/etc') ? { decision: 'deny', reason: 'system files' } : { decision: 'ask', paths: [args.path] }),
    execute: async (args) => ({ status: 'succeeded', content: `saved ${args.path}` }),
  }),
  defineTool({
    name: 'flaky',
    description: 'Always breaks',
    effect: 'read',
    input: z.object({}),
    execute: async () => {
      throw new Error('disk on fire');
    },
  }),
];

const calls = [
  { id: 'c1', name: 'lookup', args: { key: 'a' } },
  { id: 'c2', name: 'lookup', args: { key: 'forbidden' } },
  { id: 'c3', name: 'save', args: { path: '/etc/passwd' } },
  { id: 'c4', name: 'save', args: { path: 'notes.md' } },
  { id: 'c5', name: 'flaky', args: {} },
];

/** Polls the snapshot until an approval is pending, under a deadline. */
async function pendingApproval(host: TestHost, sessionId: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { body } = await host.call('GET', `/sessions/${sessionId}`);
    const pending = (body.runtime as { pendingApproval?: { toolCallId: string } | null }).pendingApproval;
    if (pending) return pending.toolCallId;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('no approval became pending');
}

describe.each(durableTargets)('the tool dispatch audit over HTTP on $name (RL-4)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('records who decided each call — mode, user, rule, hook — and how it ended, and pages through GET /sessions/:id/audit', async () => {
    db = create();
    host = await testHost(db, [{ text: 'working', toolCalls: calls }, { text: 'done' }], {
      runtime: {
        tools,
        hooks: { beforeToolDispatch: ({ args }) => (args.key === 'forbidden' ? { decision: 'deny', reason: 'not that key' } : undefined) },
      },
    });
    const sessionId = await newSession(host, { permissionMode: 'ask' });
    const turn = await postTurn(host, sessionId, 'r1');
    const turnId = turn.body.turnId as string;
    expect(await pendingApproval(host, sessionId)).toBe('c4');
    expect((await host.call('POST', `/sessions/${sessionId}/turns/${turnId}/permissions/c4`, { decision: 'allow_once' })).status).toBe(200);
    expect(await finished(host, sessionId, turnId)).toMatchObject({ status: 'completed' });

    const all = await host.call('GET', `/sessions/${sessionId}/audit`);
    expect(all.status).toBe(200);
    const entries = all.body.entries as AuditEntry[];
    expect(all.body.nextBefore).toBeNull();
    expect(entries.map((e) => [e.toolCallId, e.toolName, e.verdict, e.decidedBy, e.status, e.errorCode])).toEqual([
      ['c5', 'flaky', 'allowed', 'mode', 'failed', null],
      ['c4', 'save', 'allowed', 'user', 'succeeded', null],
      ['c3', 'save', 'denied', 'rule', 'denied', null],
      ['c2', 'lookup', 'denied', 'hook', 'denied', null],
      ['c1', 'lookup', 'allowed', 'mode', 'succeeded', null],
    ]);
    // A host without principals is its operator's: every dispatch acted for it, and it answered c4 (issue 25).
    expect(new Set(entries.map((e) => e.principal))).toEqual(new Set(['operator']));
    const byId = Object.fromEntries(entries.map((e) => [e.toolCallId, e]));
    expect(byId.c1).toMatchObject({ sessionId, turnId, argumentsHash: argumentsHash({ key: 'a' }), dispatchedArgumentsHash: null, permissionWaitMs: null });
    expect(byId.c1!.executionMs).toEqual(expect.any(Number));
    expect(byId.c4!.permissionWaitMs).toEqual(expect.any(Number));
    expect(byId.c4!.executionMs).toEqual(expect.any(Number));
    for (const id of ['c2', 'c3']) expect(byId[id]).toMatchObject({ permissionWaitMs: null, executionMs: null });

    // Each row is keyed by the result message written with it, at that message's sequence.
    const results = (await host.storage.listMessages(sessionId)).filter((m) => m.message.role === 'tool');
    expect(entries.map((e) => [e.id, e.sequence]).reverse()).toEqual(results.map((m) => [m.id, m.sequence]));

    // Paged: two at a time, newest first, the same rows as the runtime's own query.
    const pages: AuditEntry[][] = [];
    let before: number | null | undefined;
    do {
      const page = await host.call('GET', `/sessions/${sessionId}/audit?limit=2${before ? `&before=${before}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body.entries as AuditEntry[]);
      before = page.body.nextBefore as number | null;
    } while (before !== null);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual(entries);
    expect((await host.runtime.auditLog(sessionId, { limit: 2 })).entries).toEqual(entries.slice(0, 2));
  });

  it.skipIf(skip)('names the principal of each dispatch: the admin who answered an approval, else the session\'s owner (issue 25)', async () => {
    db = create();
    const callsOfAlice = [
      { id: 'a1', name: 'lookup', args: { key: 'a' } },
      { id: 'a2', name: 'save', args: { path: 'notes.md' } },
      { id: 'a3', name: 'save', args: { path: 'draft.md' } },
    ];
    host = await testHost(db, [{ text: 'working', toolCalls: callsOfAlice }, { text: 'done' }], {
      runtime: { tools },
      // Who asks is the `x-user` header (alice when none); `x-admin` makes them an admin.
      authenticate: (request) => ({ principal: request.headers.get('x-user') ?? 'alice', roles: request.headers.get('x-admin') ? ['admin'] : [] }),
    });
    const admin = { 'x-user': 'root', 'x-admin': '1' };
    const bob = { 'x-user': 'bob' };
    const sessionId = await newSession(host, { permissionMode: 'ask' });
    expect((await host.storage.getSession(sessionId))?.principal).toBe('alice');
    const turnId = (await postTurn(host, sessionId, 'r1')).body.turnId as string;

    // a2 asks: bob may not answer alice's approval (her session is unknown to him); an admin may.
    expect(await pendingApproval(host, sessionId)).toBe('a2');
    const decide = (toolCallId: string, decision: string, headers: Record<string, string> = {}) =>
      host!.call('POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, { decision }, headers);
    expect((await decide('a2', 'allow_once', bob)).status).toBe(404);
    // The body names no principal: who answers is who the request comes from.
    expect((await host.call('POST', `/sessions/${sessionId}/turns/${turnId}/permissions/a2`, { decision: 'allow_once', principal: 'mallory' }, admin)).status).toBe(400);
    expect((await decide('a2', 'allow_once', admin)).status).toBe(200);
    // a3 asks: alice denies it herself.
    expect(await pendingApproval(host, sessionId)).toBe('a3');
    expect((await decide('a3', 'deny')).status).toBe(200);
    expect(await finished(host, sessionId, turnId)).toMatchObject({ status: 'failed' });

    const log = await host.call('GET', `/sessions/${sessionId}/audit`, undefined, admin);
    expect(log.status).toBe(200);
    expect((log.body.entries as AuditEntry[]).map((e) => [e.toolCallId, e.verdict, e.decidedBy, e.principal])).toEqual([
      ['a3', 'denied', 'user', 'alice'],
      ['a2', 'allowed', 'user', 'root'],
      ['a1', 'allowed', 'mode', 'alice'],
    ]);
    // Alice reads the same log; bob has no such session.
    expect((await host.call('GET', `/sessions/${sessionId}/audit`)).body).toEqual(log.body);
    expect((await host.call('GET', `/sessions/${sessionId}/audit`, undefined, bob)).status).toBe(404);
    // The OpenAPI document describes the column.
    const doc = await host.call('GET', '/openapi.json');
    const schemas = (doc.body.components as { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> }).schemas;
    expect(schemas.AuditEntry?.properties.principal).toBeDefined();
    expect(schemas.AuditEntry?.required).toContain('principal');
  });

  it.skipIf(skip)('names the admin who answered an approval through the AI SDK endpoint (issue 25)', async () => {
    db = create();
    host = await testHost(db, [{ text: 'saving', toolCalls: [{ id: 'u1', name: 'lookup', args: { key: 'k' } }, { id: 'u2', name: 'save', args: { path: 'notes.md' } }] }, { text: 'saved' }], {
      runtime: { tools },
      // The bearer token is the principal; `admin:` before it makes an admin.
      authenticate: (request) => {
        const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
        if (!token) return null;
        return token.startsWith('admin:') ? { principal: token.slice('admin:'.length), roles: ['admin'] } : { principal: token, roles: [] };
      },
    });
    const user = userMessage('m1', 'save my notes');
    const asked = await fold(await new UiChatClient(host.url, 'chat-audit', 'alice').send([user]));
    expect(toolParts(asked.message)).toEqual([expect.objectContaining({ state: 'output-available' }), expect.objectContaining({ state: 'approval-requested' })]);
    const answered = answerApproval(asked.message, true);
    const continued = await fold(await new UiChatClient(host.url, 'chat-audit', 'admin:root').send([user, answered]), answered);
    expect(continued.errors).toEqual([]);
    const state = await host.call('GET', `/sessions/chat-audit/turns/${asked.message.id}?wait=30`, undefined, { authorization: 'Bearer alice' });
    expect(state.body).toMatchObject({ status: 'completed' });

    const log = await host.call('GET', '/sessions/chat-audit/audit', undefined, { authorization: 'Bearer alice' });
    expect((log.body.entries as AuditEntry[]).map((e) => [e.toolCallId, e.decidedBy, e.principal])).toEqual([
      ['u2', 'user', 'root'],
      ['u1', 'mode', 'alice'],
    ]);
  });

  it.skipIf(skip)('answers 404 for an unknown session, 400 for a bad page, and is in the OpenAPI document', async () => {
    db = create();
    host = await testHost(db, [{ text: 'hi' }]);
    const sessionId = await newSession(host);
    expect(await host.call('GET', `/sessions/${sessionId}/audit`)).toEqual({ status: 200, body: { entries: [], nextBefore: null } });
    expect((await host.call('GET', '/sessions/ses_nobody/audit')).body).toMatchObject({ error: { code: 'UnknownSession' } });
    expect((await host.call('GET', '/sessions/ses_nobody/audit')).status).toBe(404);
    for (const query of ['limit=0', 'limit=501', 'before=-1', 'limit=abc', 'before=1.5']) {
      const bad = await host.call('GET', `/sessions/${sessionId}/audit?${query}`);
      expect([query, bad.status, (bad.body.error as { code: string }).code]).toEqual([query, 400, 'InvalidInput']);
    }
    const doc = await host.call('GET', '/openapi.json');
    const paths = doc.body.paths as Record<string, { get?: { parameters?: { name: string }[] } }>;
    expect(paths['/sessions/{sessionId}/audit']?.get?.parameters?.map((p) => p.name).sort()).toEqual(['before', 'limit', 'sessionId']);
  });
});
