import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFile } from '../support/databases.js';
import { startFakeOpenAiServer, sse, type FakeOpenAiServer } from '../support/fake-openai-server.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { logMessages } from '../support/log-lines.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-provider-host-');

describe('turnchart serve --model openai-compatible:BASE_URL#MODEL', { timeout: 60_000 }, () => {
  let host: HostProcess | undefined;
  let server: FakeOpenAiServer | undefined;
  afterEach(async () => {
    host?.kill('SIGKILL');
    await host?.exited;
    host = undefined;
    await server?.close();
    server = undefined;
  });

  it('runs a turn against the provider: key from the environment, capabilities from flags, a 429 retried, usage in the outcome', async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    await writeFile(path.join(workspace, 'a.txt'), 'hello from a\n');
    server = await startFakeOpenAiServer([
      // A small real wait: that the host honours it is what is tested.
      { status: 429, headers: { 'retry-after-ms': '20' }, body: { error: { message: 'Rate limit reached', code: 'rate_limit_exceeded' } } },
      { chunks: sse.reply({ text: 'Reading.', calls: [{ id: 'call_0', name: 'read_file', arguments: '{"path":"a.txt"}' }], usage: { prompt_tokens: 900, completion_tokens: 30 } }) },
      { chunks: sse.reply({ text: 'It says hello from a.', usage: { prompt_tokens: 1000, completion_tokens: 10, cached_tokens: 800 } }) },
    ]);
    host = await spawnHost(
      ['--db', db.file, '--workspace', workspace, '--model', `openai-compatible:${server.baseUrl}#fake-model`, '--max-output-tokens', '1024'],
      { TURNCHART_API_KEY: 'sk-from-env', TURNCHART_CONTEXT_WINDOW: '32000' },
    );
    expect(logMessages(host.stderr())).toContain(`model: fake-model at ${server.baseUrl} (OpenAI-compatible)`);
    expect(host.output()).not.toContain('sk-from-env');

    const sessionId = (await call(host.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const accepted = await call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'what does a.txt say?' }] });
    expect(accepted.status).toBe(202);
    const turn = await call(host.url, 'GET', `/sessions/${sessionId}/turns/${accepted.body.turnId as string}?wait=30`);

    expect(turn.body).toMatchObject({
      status: 'completed',
      outcome: {
        status: 'completed',
        finalText: 'It says hello from a.',
        finishReason: 'stop',
        usage: { inputTokens: 1900, outputTokens: 40, cachedInputTokens: 800, reasoningTokens: 0 },
      },
    });
    const requests = server.requests;
    expect(requests).toHaveLength(3);
    expect(requests.every((r) => r.headers.authorization === 'Bearer sk-from-env')).toBe(true);
    expect(requests[0]!.body).toMatchObject({ model: 'fake-model', max_tokens: 1024 });
    expect(requests[2]!.body.messages.find((m) => m.role === 'tool')).toEqual({ role: 'tool', tool_call_id: 'call_0', content: '1\thello from a' });
    // The window from the environment, the output from the flag: ceil(85 % × (32 000 − 1 024)).
    expect((await call(host.url, 'GET', `/sessions/${sessionId}/context`)).body).toMatchObject({ autoCompactTokenLimit: 26_330 });
    await db.drop();
  });
});
