import { expect } from 'vitest';
import type { DurableDatabase } from '../databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../host.js';
import { endlessModel } from './endless-model.js';
import { operationsOf, type OpenApiDocument, type Operation } from './http-request.js';
import type { SchemaContext } from './json-schema.js';

/**
 * A host for one batch of hostile requests: a model that always answers, a session that has run
 * turns and holds a checkpoint, and the ids that let generated requests reach real state.
 */
export interface HostileHost {
  host: TestHost;
  db: DurableDatabase;
  operations: Operation[];
  sessionId: string;
  turnId: string;
  compactionId: string;
  /** Live ids and names for generated strings and path segments. */
  known: string[];
  /** The live id for each path parameter (`sessionId`, `turnId`, `toolCallId`, and `id`, the chat id of `/api/chat`). */
  ids: Record<string, string>;
  context: SchemaContext;
  /** The Authorization header the host requires, if any. */
  auth: [string, string][];
}

export async function hostileHost(db: DurableDatabase, options: { token?: string } = {}): Promise<HostileHost> {
  const host = await testHost(db, endlessModel(), { ...(options.token && { token: options.token }) });
  const auth: [string, string][] = options.token ? [['authorization', `Bearer ${options.token}`]] : [];
  const authorized: TestHost = { ...host, call: (method, path, body, headers = {}) => host.call(method, path, body, { ...Object.fromEntries(auth), ...headers }) };
  const doc = (await authorized.call('GET', '/openapi.json')).body as unknown as OpenApiDocument;
  const sessionId = await newSession(authorized);
  const turnId = await completedTurn(authorized, sessionId, 'setup-1');
  const compacted = await authorized.call('POST', `/sessions/${sessionId}/compact`);
  expect(compacted.status).toBe(200);
  await completedTurn(authorized, sessionId, 'setup-2');
  const compactionId = compacted.body.compactionId as string;
  const known = [sessionId, turnId, compactionId, 'default', 'setup-1', 'call_nope'];
  const ids = { sessionId, turnId, toolCallId: 'call_nope', id: sessionId };
  return { host: authorized, db, operations: operationsOf(doc), sessionId, turnId, compactionId, known, ids, context: { components: doc.components.schemas, known }, auth };
}

async function completedTurn(host: TestHost, sessionId: string, clientRequestId: string): Promise<string> {
  const turn = await postTurn(host, sessionId, clientRequestId);
  expect(turn.status).toBe(202);
  const turnId = turn.body.turnId as string;
  expect(await finished(host, sessionId, turnId)).toMatchObject({ status: 'completed' });
  return turnId;
}

/**
 * After the batch: the host answers its health check, and the session — once whatever a generated
 * request started has ended — completes a normal turn through the API.
 */
export async function expectUsable(h: HostileHost): Promise<void> {
  expect((await h.host.call('GET', '/healthz')).status).toBe(200);
  const snapshot = await h.host.call('GET', `/sessions/${h.sessionId}`);
  expect(snapshot.status).toBe(200);
  const running = (snapshot.body.runtime as { kind: string; turnId?: string }).kind === 'running' ? (snapshot.body.runtime as { turnId: string }).turnId : null;
  if (running) await finished(h.host, h.sessionId, running);
  const turn = await postTurn(h.host, h.sessionId, `after-${Date.now()}`, 'a normal turn after the hostile batch');
  expect(turn).toMatchObject({ status: 202 });
  expect(await finished(h.host, h.sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { status: 'completed', finalText: 'ok' } });
}

/** Neither `Object.prototype` nor `Array.prototype` gained anything. */
export function expectUnpolluted(before: { object: string[]; array: string[] }): void {
  expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(before.object);
  expect(Object.getOwnPropertyNames(Array.prototype)).toEqual(before.array);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}

export function prototypeNames(): { object: string[]; array: string[] } {
  return { object: Object.getOwnPropertyNames(Object.prototype), array: Object.getOwnPropertyNames(Array.prototype) };
}
