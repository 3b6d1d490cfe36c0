import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFile } from '../support/databases.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import type { LogLine } from '../support/log-lines.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-logs-');
const TOKEN = 'log-test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };

/**
 * A host whose every model call warns about its session and turn: its skills directory holds a
 * folder without SKILL.md, which the world state reports (a warning for the operator, never the model's).
 */
async function hostWithBrokenSkill(args: string[], env: Record<string, string> = {}): Promise<HostProcess> {
  const dir = await tempDir();
  await mkdir(path.join(dir, 'skills', 'broken'), { recursive: true });
  await writeFile(path.join(dir, 'turnchart.config.json'), JSON.stringify({ skills: { dir: 'skills' } }));
  await mkdir(path.join(dir, 'workspace'));
  return spawnHost(['--config', path.join(dir, 'turnchart.config.json'), '--db', sqliteFile().file, '--workspace', path.join(dir, 'workspace'), ...args], { TURNCHART_TOKEN: TOKEN, ...env });
}

/** One turn over HTTP, to its end: the demo model lists the workspace and summarises it. */
async function runTurn(url: string): Promise<{ sessionId: string; turnId: string }> {
  const created = await call(url, 'POST', '/sessions', { permissionMode: 'auto' }, auth);
  expect(created.status).toBe(201);
  const sessionId = created.body.sessionId as string;
  const started = await call(url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'what is here?' }] }, auth);
  expect(started.status).toBe(202);
  const turnId = started.body.turnId as string;
  const ended = await call(url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`, undefined, auth);
  expect(ended.body).toMatchObject({ status: 'completed' });
  return { sessionId, turnId };
}

describe('turnchart serve logs (issue 27), a real process', { timeout: 60_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it('--log-format json: every stderr line is a JSON object with level, time and msg; the start, the warning of a turn (with its session and turn ids) and the shutdown are there; no secret', async () => {
    const host = await hostWithBrokenSkill(['--log-format', 'json']);
    processes.push(host);
    const { sessionId, turnId } = await runTurn(host.url);
    host.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    await host.closed;

    const stderr = host.stderr();
    const lines = stderr.split('\n').filter((line) => line !== '');
    const parsed = lines.map((line) => JSON.parse(line) as LogLine);
    for (const line of parsed) {
      expect(line).toMatchObject({ level: expect.any(String), time: expect.any(String), msg: expect.any(String), name: 'turnchart' });
      expect(new Date(line.time).toISOString()).toBe(line.time);
    }
    const messages = parsed.map((line) => line.msg);
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^config: .*turnchart\.config\.json; agents: /),
        expect.stringMatching(/^model: the demo model/),
        expect.stringMatching(/^storage: SQLite /),
        expect.stringMatching(/^auth: the shared token/),
        `listening on ${host.url}`,
        'SIGTERM, shutting down',
      ]),
    );
    expect(messages.at(-1)).toBe('stopped');
    const warning = parsed.find((line) => line.msg === 'skill broken: no SKILL.md');
    expect(warning).toMatchObject({ level: 'warn', sessionId, turnId });
    // The listening line scripts wait for stays on stdout, as plain text.
    expect(host.output()).toContain(`turnchart listening on ${host.url}`);
    expect(stderr).not.toContain(TOKEN);
  });

  it('TURNCHART_LOG_FORMAT=pretty: lines a person reads, not JSON, holding the messages and the ids', async () => {
    const host = await hostWithBrokenSkill([], { TURNCHART_LOG_FORMAT: 'pretty' });
    processes.push(host);
    const { sessionId, turnId } = await runTurn(host.url);
    host.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    await host.closed;

    const lines = host.stderr().split('\n').filter((line) => line !== '');
    for (const line of lines) expect(() => JSON.parse(line) as unknown).toThrow();
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/INFO.*\(turnchart\): model: the demo model/), expect.stringMatching(/INFO.*\(turnchart\): stopped$/)]));
    const warning = lines.find((line) => line.includes('skill broken: no SKILL.md'));
    expect(warning).toMatch(/WARN/);
    expect(warning).toContain(`"sessionId":"${sessionId}"`);
    expect(warning).toContain(`"turnId":"${turnId}"`);
  });

  describe('with --otel', () => {
    let receiver: OtlpReceiver;
    beforeAll(async () => {
      receiver = await startOtlpReceiver();
    });
    afterAll(() => receiver.close());

    it("a line about a turn carries the trace id of the turn's exported invoke_agent span", async () => {
      const host = await hostWithBrokenSkill(['--log-format', 'json', '--otel'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: '',
        OTEL_RESOURCE_ATTRIBUTES: '',
        OTEL_TRACES_EXPORTER: '',
        OTEL_BSP_SCHEDULE_DELAY: '',
      });
      processes.push(host);
      const { turnId } = await runTurn(host.url);
      host.kill('SIGTERM');
      expect(await host.exited).toBe(0);
      await host.closed;

      // Exported as the host stopped (the SDK's shutdown flushes its batch).
      const turn = receiver.spans.find((span) => span.attributes['turnchart.turn.id'] === turnId && span.name.startsWith('invoke_agent'));
      expect(turn?.traceId).toMatch(/^[0-9a-f]{32}$/);
      const parsed = host.stderr().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine);
      const warnings = parsed.filter((line) => line.msg === 'skill broken: no SKILL.md');
      expect(warnings.length).toBeGreaterThan(0);
      for (const warning of warnings) expect(warning).toMatchObject({ turnId, trace_id: turn!.traceId });
      // Lines about no turn, outside any span: no trace.
      expect(parsed.find((line) => line.msg.startsWith('model: '))).not.toHaveProperty('trace_id');
    });
  });

  it('a bad --log-format is refused before the start, naming the flag and its variable', async () => {
    await expect(spawnHost(['--log-format', 'xml', '--db', sqliteFile().file])).rejects.toThrow(/--log-format \(TURNCHART_LOG_FORMAT\): Invalid option: expected one of "json"\|"pretty"/);
  });
});
