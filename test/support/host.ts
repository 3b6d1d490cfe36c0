import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { startHost, type HostOptions, type RunningHost } from '../../src/host/host.js';
import { scriptedModel, withFaults, type FaultyStorage, type ModelPort, type ScriptedStep } from '../../src/index.js';
import type { DurableDatabase } from './databases.js';

/** A host on an ephemeral loopback port over a real database, its storage wrapped in `withFaults`. */
export interface TestHost extends RunningHost {
  storage: FaultyStorage;
  workspace: string;
  /** JSON over real HTTP: the status and the parsed body. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }>;
}

export async function testHost(
  db: DurableDatabase,
  model: ModelPort | ScriptedStep[],
  options: Partial<Omit<HostOptions, 'model' | 'storage'>> = {},
): Promise<TestHost> {
  const workspace = options.workspace ?? (await mkdtemp(path.join(os.tmpdir(), 'turnchart-host-')));
  const storage = withFaults(db.open());
  const host = await startHost({
    host: '127.0.0.1',
    port: 0,
    idleTtlSeconds: 300,
    ...options,
    workspace,
    storage,
    model: Array.isArray(model) ? scriptedModel(model) : model,
    warn: options.warn ?? (() => undefined),
  });
  return {
    ...host,
    storage,
    workspace,
    call: (method, route, body, headers = {}) => call(host.url, method, route, body, headers),
    close: async () => {
      await host.close();
      if (!options.workspace) await rm(workspace, { recursive: true, force: true });
    },
  };
}

/** Opens test hosts, each on its database; after each test every host opened is closed and its database dropped. */
export function useTestHosts(): (db: DurableDatabase, model: ModelPort | ScriptedStep[], options?: Partial<Omit<HostOptions, 'model' | 'storage'>>) => Promise<TestHost> {
  const opened: { db: DurableDatabase; host?: TestHost }[] = [];
  afterEach(async () => {
    for (const { db, host } of opened.splice(0).reverse()) {
      await host?.close();
      await db.drop();
    }
  });
  return async (db, model, options = {}) => {
    const entry: { db: DurableDatabase; host?: TestHost } = { db };
    opened.push(entry);
    entry.host = await testHost(db, model, options);
    return entry.host;
  };
}

export async function call(
  base: string,
  method: string,
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(base + route, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** Creates a session through the API and returns its id. */
export async function newSession(host: TestHost, body: Record<string, unknown> = {}): Promise<string> {
  const created = await host.call('POST', '/sessions', body);
  if (created.status !== 201) throw new Error(`POST /sessions answered ${created.status}: ${JSON.stringify(created.body)}`);
  return created.body.sessionId as string;
}

/** Posts a text turn; resolves with the response. */
export function postTurn(host: TestHost, sessionId: string, clientRequestId: string, text = 'go') {
  return host.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId, input: [{ type: 'text', text }] });
}

/** Holds until the turn ends (the API's own `?wait`), then answers its state. */
export async function finished(host: TestHost, sessionId: string, turnId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const state = await host.call('GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
    if (state.status !== 200) throw new Error(`GET turn answered ${state.status}: ${JSON.stringify(state.body)}`);
    if (state.body.status !== 'running' && state.body.status !== 'queued') return state.body;
  }
}

/** A model step that waits until released; `reached` resolves when the model call starts. A cancel aborts it. */
export function gatedStep(reply: { text?: string; toolCalls?: { name: string; args?: unknown }[] } = { text: 'released' }) {
  let release: () => void = () => undefined;
  let markReached: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (markReached = resolve));
  const step: ScriptedStep = async () => {
    markReached();
    await gate;
    return reply;
  };
  return { step, reached, release: () => release() };
}
