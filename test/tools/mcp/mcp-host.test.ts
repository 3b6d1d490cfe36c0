import { expect, it } from 'vitest';
import type { ModelRequest } from '../../../src/protocol/model.js';
import { bundled } from '../../support/bundles.js';
import { sqliteFile } from '../../support/databases.js';
import { finished, newSession, postTurn, testHost } from '../../support/host.js';
import { isRunning } from '../../../src/tools/sandbox/process-table.js';
import { until } from '../../support/poll.js';
import { WarnLog } from './support.js';

/** An MCP server's tool through the whole host: `startHost({ mcpServers })`, a turn over HTTP, the model calling `fixture__echo`. */

const fixture = { command: process.execPath, args: [bundled('mcp-fixture-server')] };

it('a turn calls an MCP tool through the HTTP API, and the host closes the server with itself', async () => {
  const db = sqliteFile();
  const log = new WarnLog();
  const seen: ModelRequest[] = [];
  let pid = NaN;
  const host = await testHost(
    db,
    [
      (request) => {
        seen.push(request);
        return { toolCalls: [{ name: 'fixture__echo', args: { text: 'echoed by the MCP server' } }, { name: 'fixture__echo', args: { text: 7 } }, { name: 'fixture__pid', args: {} }] };
      },
      (request) => {
        const results = request.messages.filter((m) => m.role === 'tool');
        pid = Number(results.find((m) => m.toolName === 'fixture__pid')?.content);
        return { text: results.map((m) => `${m.status}: ${m.content}`).join(' | ') };
      },
    ],
    { mcpServers: { fixture }, warn: log.warn },
  );
  try {
    const sessionId = await newSession(host, { permissionMode: 'ask' });
    const turn = await postTurn(host, sessionId, 'req-1', 'echo something');
    expect(turn.status).toBe(202);
    const state = await finished(host, sessionId, turn.body.turnId as string);
    expect(state.status).toBe('completed');
    const finalText = (state.outcome as { finalText: string }).finalText;
    // A read needs no approval in ask mode; the invalid call gets the invalid-arguments result a native tool gets.
    expect(finalText).toMatch(/^success: echoed by the MCP server \| error: InvalidArguments: .*must be string.*\| success: \d+$/s);
    const definition = seen[0]!.tools.find((t) => t.name === 'fixture__echo');
    expect(definition?.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
    const audit = await host.call('GET', `/sessions/${sessionId}/audit`);
    expect(JSON.stringify(audit.body)).toContain('fixture__echo');
    expect(await isRunning(pid)).toBe(true);
  } finally {
    await host.close();
    await db.drop();
  }
  expect(await isRunning(pid)).toBe(false);
});

it('a required server that cannot start fails startHost', async () => {
  const db = sqliteFile();
  try {
    await expect(
      testHost(db, [], { mcpServers: { broken: { command: process.execPath, args: ['-e', 'process.exit(2)'], required: true } } }),
    ).rejects.toMatchObject({ code: 'McpServerUnavailable' });
  } finally {
    await db.drop();
  }
});

it('a session-scoped server gives each session its own process, ended when the session closes', async () => {
  const db = sqliteFile();
  const pids: number[] = [];
  const callPid = () => ({ toolCalls: [{ name: 'fixture__pid', args: {} }] });
  const answer = (request: ModelRequest) => {
    pids.push(Number(request.messages.filter((m) => m.role === 'tool').at(-1)?.content));
    return { text: 'ok' };
  };
  const host = await testHost(db, [callPid, answer, callPid, answer, callPid, answer], { mcpServers: { fixture: { ...fixture, scope: 'session' } } });
  try {
    const sessions = [await newSession(host, { permissionMode: 'ask' }), await newSession(host, { permissionMode: 'ask' })];
    for (const [i, sessionId] of [sessions[0]!, sessions[1]!, sessions[0]!].entries()) {
      const turn = await postTurn(host, sessionId, `req-${i}`, 'which process?');
      expect((await finished(host, sessionId, turn.body.turnId as string)).status).toBe('completed');
    }
    const [first, second, firstAgain] = pids;
    expect(first).not.toBe(second);
    expect(firstAgain).toBe(first);
    expect(await isRunning(first!)).toBe(true);
    // The runtime's sessionClosed$ reaches McpServers.closeSession: the first session's process ends, the second's runs on.
    await (await host.runtime.openSession(sessions[0]!)).close();
    await until('the first session’s MCP server to end', async () => !(await isRunning(first!)));
    expect(await isRunning(second!)).toBe(true);
  } finally {
    await host.close();
    await db.drop();
  }
  expect(await isRunning(pids[1]!)).toBe(false);
});
