import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { spawnHost } from '../support/host-process.js';
import { bundled } from '../support/bundles.js';
import { OTLP_KIND, startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { OtelUnavailableError, startOtelSdk } from '../../src/telemetry/otel-sdk.js';
import { serveSettings } from '../../src/cli/serve.js';
import { workerSettings } from '../../src/cli/worker.js';

/**
 * Issue 27: `turnchart serve --otel` as an operator runs it — OpenTelemetry's SDK configured by the
 * standard OTEL_* variables, exporting OTLP/HTTP JSON to a receiver — and the spans of a turn run
 * through the HTTP API arriving when the host is stopped with SIGTERM (the batch's default delay is
 * 5 s, longer than the test: only the flush on shutdown can have sent them).
 */

let receiver: OtlpReceiver;
let dir: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  dir = mkdtempSync(path.join(tmpdir(), 'turnchart-otel-'));
  writeFileSync(path.join(dir, 'notes.txt'), 'the build is green\n');
  writeFileSync(
    path.join(dir, 'script.json'),
    JSON.stringify([{ toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' } }], usage: { inputTokens: 50, outputTokens: 5 } }, { text: 'The build is green.', usage: { inputTokens: 80, outputTokens: 6 } }]),
  );
});

afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

const OTEL_ENV = () => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: '',
  OTEL_RESOURCE_ATTRIBUTES: '',
  OTEL_TRACES_EXPORTER: '',
  OTEL_BSP_SCHEDULE_DELAY: '',
});

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return (await response.json()) as Record<string, unknown>;
}

describe('turnchart serve --otel', () => {
  it("exports a turn's invoke_agent, chat and execute_tool spans over OTLP/HTTP JSON, flushed as SIGTERM stops the host", async () => {
    const host = await spawnHost(
      ['--otel', '--db', path.join(dir, 'host.db'), '--workspace', dir, '--model', `scripted:${path.join(dir, 'script.json')}`, '--permission-mode', 'auto'],
      OTEL_ENV(),
    );
    const { sessionId } = (await post(`${host.url}/sessions`, {})) as { sessionId: string };
    const { turnId } = (await post(`${host.url}/sessions/${sessionId}/turns`, { clientRequestId: 'otel-1', input: [{ type: 'text', text: 'Is the build green?' }] })) as { turnId: string };
    const waited = (await (await fetch(`${host.url}/sessions/${sessionId}/turns/${turnId}?wait=30`)).json()) as { status: string };
    expect(waited.status).toBe('completed');
    // Nothing is exported yet: the batch waits its 5 s.
    expect(receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId)).toEqual([]);

    host.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    expect(host.output()).toContain('otel: traces exported over OTLP');
    const spans = receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId);
    expect(spans.map((span) => span.name).sort()).toEqual(['chat scripted', 'chat scripted', 'execute_tool read_file', 'invoke_agent default']);
    const turn = spans.find((span) => span.name === 'invoke_agent default')!;
    expect(turn.resource['service.name']).toBe('turnchart');
    expect(turn.attributes).toMatchObject({ 'gen_ai.conversation.id': sessionId, 'gen_ai.usage.input_tokens': 130, 'gen_ai.usage.output_tokens': 11 });
    for (const span of spans.filter((s) => s !== turn)) {
      expect(span.traceId).toBe(turn.traceId);
      expect(span.parentSpanId).toBe(turn.spanId);
    }
    const tool = spans.find((span) => span.name === 'execute_tool read_file')!;
    expect(tool.kind).toBe(OTLP_KIND.INTERNAL);
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'read_file', 'gen_ai.tool.type': 'function' });
    // Content is off unless asked for.
    for (const span of spans) expect(Object.keys(span.attributes).filter((key) => /messages|arguments|result|instructions/.test(key))).toEqual([]);
    expect(receiver.refused).toBe(0);
  });

  it('refuses --otel-content without --otel, naming both', async () => {
    const child = spawn(process.execPath, [bundled('cli'), 'serve', '--port', '0', '--db', path.join(dir, 'refused.db'), '--otel-content'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(text).toContain('--otel-content (TURNCHART_OTEL_CONTENT)');
    expect(text).toContain('--otel (TURNCHART_OTEL)');
  });

  it('reads --otel as a switch, and TURNCHART_OTEL / TURNCHART_OTEL_CONTENT as on or off, for serve and worker', () => {
    expect(serveSettings([], {})).toMatchObject({ otel: false, 'otel-content': false });
    expect(serveSettings(['--otel', '--port', '0'], {})).toMatchObject({ otel: true, 'otel-content': false, port: 0 });
    expect(serveSettings(['--otel', '--otel-content'], {})).toMatchObject({ otel: true, 'otel-content': true });
    expect(serveSettings([], { TURNCHART_OTEL: '1', TURNCHART_OTEL_CONTENT: 'on' })).toMatchObject({ otel: true, 'otel-content': true });
    expect(serveSettings([], { TURNCHART_OTEL: 'off' })).toMatchObject({ otel: false });
    expect(() => serveSettings([], { TURNCHART_OTEL: 'maybe' })).toThrow(/--otel \(TURNCHART_OTEL\): on or off/);
    const amqp = { TURNCHART_AMQP_URL: 'amqp://127.0.0.1:5672' };
    expect(workerSettings(['--otel'], amqp)).toMatchObject({ otel: true, 'otel-content': false });
    expect(() => workerSettings([], { ...amqp, TURNCHART_OTEL_CONTENT: 'true' })).toThrow(/TURNCHART_OTEL_CONTENT.*--otel \(TURNCHART_OTEL\)/);
  });

  it('says what to install when the SDK is missing', async () => {
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/sdk-node'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const started = startOtelSdk({ defaultServiceName: 'turnchart', load: () => Promise.reject(missing) });
    await expect(started).rejects.toBeInstanceOf(OtelUnavailableError);
    await expect(started).rejects.toThrow(/npm install @opentelemetry\/sdk-node/);
  });
});
