import { mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/host/app.js';
import { startHost, type RunningHost } from '../../src/host/host.js';
import { sqliteStorage, type ModelPort, type SessionStorage } from '../../src/index.js';

const model: ModelPort = {
  capabilities: { contextWindow: 200_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 },
  async *stream() {
    yield { type: 'response_completed', response: { text: 'ok', reasoning: '', toolCalls: [] } };
  },
};

let host: RunningHost | null = null;
let storage: SessionStorage;
let workspace = '';

async function open(): Promise<RunningHost> {
  workspace = mkdtempSync(join(tmpdir(), 'turnchart-limit-'));
  storage = sqliteStorage({ filename: ':memory:' });
  host = await startHost({ host: '127.0.0.1', port: 0, workspace, model, idleTtlSeconds: 3_600, storage, warn: () => undefined });
  return host;
}

afterEach(async () => {
  await host?.close();
  host = null;
  rmSync(workspace, { recursive: true, force: true });
});

/** A raw request, so the test decides between `Content-Length` and chunked transfer encoding. */
function send(url: string, method: string, body: string | null, framing: 'length' | 'chunked'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = body === null ? {} : { 'content-type': 'application/json' };
    if (body !== null && framing === 'length') headers['content-length'] = Buffer.byteLength(body);
    const request = http.request(url, { method, headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    if (body !== null && framing === 'chunked') {
      // Written in pieces without a length: Node sends it chunked.
      for (let i = 0; i < body.length; i += 64 * 1024) request.write(body.slice(i, i + 64 * 1024));
    }
    request.end(body !== null && framing === 'length' ? body : undefined);
  });
}

describe('the body limit', () => {
  it('refuses a body over the limit whether its size is declared or it comes chunked', async () => {
    const { url } = await open();
    const created = await send(`${url}/sessions`, 'POST', JSON.stringify({ permissionMode: 'auto' }), 'length');
    expect(created.status).toBe(201);
    const { sessionId } = JSON.parse(created.body) as { sessionId: string };
    const big = JSON.stringify({ clientRequestId: 'big', input: [{ type: 'text', text: 'x'.repeat(MAX_BODY_BYTES + 10) }] });
    for (const framing of ['length', 'chunked'] as const) {
      const answer = await send(`${url}/sessions/${sessionId}/turns`, 'POST', big, framing);
      expect({ framing, status: answer.status, code: (JSON.parse(answer.body) as { error: { code: string } }).error.code }).toEqual({
        framing,
        status: 413,
        code: 'PayloadTooLarge',
      });
    }
    expect(await storage.listTurns(sessionId)).toEqual([]);
  });

  it('reads bodies under the limit, declared or chunked, and requests without a body', async () => {
    const { url } = await open();
    for (const framing of ['length', 'chunked'] as const) {
      const created = await send(`${url}/sessions`, 'POST', JSON.stringify({ permissionMode: 'auto' }), framing);
      expect({ framing, status: created.status }).toEqual({ framing, status: 201 });
      const { sessionId } = JSON.parse(created.body) as { sessionId: string };
      const body = JSON.stringify({ clientRequestId: `r-${framing}`, input: [{ type: 'text', text: 'y'.repeat(150_000) }] });
      const turn = await send(`${url}/sessions/${sessionId}/turns`, 'POST', body, framing);
      expect({ framing, status: turn.status }).toEqual({ framing, status: 202 });
      const { turnId } = JSON.parse(turn.body) as { turnId: string };
      const state = await send(`${url}/sessions/${sessionId}/turns/${turnId}?wait=10`, 'GET', null, 'length');
      expect(JSON.parse(state.body)).toMatchObject({ turnId, status: 'completed' });
    }
    // A POST without a body is a POST with an empty one: the session is created with the defaults.
    expect((await send(`${url}/sessions`, 'POST', null, 'length')).status).toBe(201);
  });
});
