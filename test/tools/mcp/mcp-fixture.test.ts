import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundled } from '../../support/bundles.js';
import { McpServers, type McpServersConfig } from '../../../src/tools/mcp/index.js';
import { isRunning } from '../../../src/tools/sandbox/process-table.js';
import { run, tempDir, toolNamed, WarnLog } from './support.js';

/**
 * MCP servers as tools, against the fixture server (test/support/mcp-fixture-server.ts) over stdio:
 * real processes, each started through `McpServers.start` as the host starts them.
 */

const fixture = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [bundled('mcp-fixture-server')], ...extra });

let ledger: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ledger = await tempDir('turnchart-mcp-ledger-');
});
afterAll(async () => {
  await ledger.remove();
});

async function start(config: McpServersConfig, log = new WarnLog(), secrets: string[] = []) {
  const servers = await McpServers.start(config, { warn: log.warn, ledgerDir: ledger.dir, secrets, killGraceMs: 500 });
  return { servers, log };
}

describe('a shared fixture server', () => {
  let servers: McpServers;
  let log: WarnLog;
  beforeAll(async () => {
    ({ servers, log } = await start({ fixture: fixture({ tools: { writer: { effect: 'write' } } }) }));
  });
  afterAll(async () => {
    await servers.close();
  });

  it('offers its tools as <server>__<tool>, described by its JSON Schema, with effects from annotations and config', () => {
    const names = servers.tools().map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['fixture__echo', 'fixture__writer', 'fixture__careful_writer', 'fixture__hang', 'fixture__progress']));
    const echo = toolNamed(servers, 'fixture__echo');
    expect(echo.effect).toBe('read');
    expect(echo.idempotent).toBe(true);
    expect(echo.inputJsonSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(toolNamed(servers, 'fixture__writer').effect).toBe('write'); // the config's override
    expect(toolNamed(servers, 'fixture__careful_writer').effect).toBe('execute'); // destructiveHint: false is still no read
    expect(toolNamed(servers, 'fixture__careful_writer').idempotent).toBe(false);
    expect(toolNamed(servers, 'fixture__crash').effect).toBe('execute');
    expect(servers.sources.map((s) => s.name)).toEqual(['mcp:fixture']);
  });

  it('calls a tool, and refuses invalid arguments before the call with the schema errors', async () => {
    const echo = toolNamed(servers, 'fixture__echo');
    expect(await run(echo, { text: 'hello' })).toEqual({ status: 'succeeded', content: 'hello' });
    const invalid = await run(echo, { text: 5 });
    expect(invalid.status).toBe('failed');
    expect(invalid.content).toMatch(/must be string[\s\S]*text/);
    expect((await run(echo, {})).content).toMatch(/must have required property 'text'/);
  });

  it('turns results into text: isError fails, structured content as JSON, media described', async () => {
    expect(await run(toolNamed(servers, 'fixture__fail'), {})).toEqual({ status: 'failed', content: 'the thing is broken' });
    const structured = await run(toolNamed(servers, 'fixture__structured'), {});
    expect(structured.status).toBe('succeeded');
    expect(JSON.parse(structured.content)).toEqual({ temperature: 21.5, unit: 'C' });
    const media = await run(toolNamed(servers, 'fixture__media'), {});
    expect(media.content.split('\n')).toEqual([
      '[image image/png, 10 bytes]',
      '[resource link: file:///tmp/report.txt (report)]',
      'embedded note',
      '[resource mem://blob application/octet-stream, 4 bytes]',
    ]);
  });

  it('passes progress notifications to ctx.progress', async () => {
    const seen: unknown[] = [];
    const result = await run(toolNamed(servers, 'fixture__progress'), { steps: 3 }, { progress: (p) => seen.push(p) });
    expect(result).toEqual({ status: 'succeeded', content: 'done in 3 steps' });
    expect(seen).toEqual([1, 2, 3].map((step) => ({ progress: step, total: 3, message: `step ${step}` })));
  });

  it('sends the cancel to the server when the signal is aborted', async () => {
    const abort = new AbortController();
    const call = run(toolNamed(servers, 'fixture__hang'), {}, { signal: abort.signal });
    await log.waitFor(/\[mcp:fixture\] hang: started request/);
    abort.abort();
    expect(await call).toEqual({ status: 'cancelled', content: 'the call was cancelled' });
    await log.waitFor(/\[mcp:fixture\] hang: cancelled request/);
  });

  it('sends the server’s stderr to warn, line by line, prefixed', async () => {
    await log.waitFor(/^\[mcp:fixture\] fixture ready$/);
    await run(toolNamed(servers, 'fixture__noisy'), { lines: 2 });
    await log.waitFor(/^\[mcp:fixture\] noise 1$/);
    expect(log.lines).toContain('[mcp:fixture] noise 0');
  });

  it('refreshes its tools on notifications/tools/list_changed', async () => {
    const source = servers.source('fixture')!;
    const changed = new Promise<void>((resolve) => source.subscribe(resolve));
    expect(await run(toolNamed(servers, 'fixture__add_tool'), { name: 'late' })).toEqual({ status: 'succeeded', content: 'added late' });
    await changed;
    expect(source.tools().map((t) => t.name)).toContain('fixture__late');
    expect(await run(toolNamed(servers, 'fixture__late'), {})).toEqual({ status: 'succeeded', content: 'late here' });
  });
});

describe('failures', () => {
  it('fails a call whose server exits mid-call, naming it and its exit code, and restarts it on the next call', async () => {
    const { servers, log } = await start({ fixture: fixture() });
    try {
      const first = servers.connections[0]!.pid;
      expect(await run(toolNamed(servers, 'fixture__crash'), {})).toEqual({ status: 'failed', content: "MCP server 'fixture' exited (code 1)" });
      expect(log.lines).toContain("MCP server 'fixture' exited (code 1); it will be started again on its next use");
      expect(await run(toolNamed(servers, 'fixture__echo'), { text: 'again' })).toEqual({ status: 'succeeded', content: 'again' });
      expect(servers.connections[0]!.pid).not.toBe(first);
    } finally {
      await servers.close();
    }
  });

  it('fails a call past the server’s timeoutMs without throwing', async () => {
    const { servers } = await start({ fixture: fixture({ timeoutMs: 300 }) });
    try {
      const hang = toolNamed(servers, 'fixture__hang');
      expect(hang.timeoutMs).toBe(300);
      expect(await run(hang, {})).toEqual({ status: 'failed', content: "MCP server 'fixture' did not answer 'hang' within 300 ms" });
    } finally {
      await servers.close();
    }
  });

  it('warns about a server that cannot start and offers none of its tools; a required one fails the start', async () => {
    const log = new WarnLog();
    const { servers } = await start({ fixture: fixture(), gone: { command: '/nonexistent/mcp-server' }, quits: { command: process.execPath, args: ['-e', 'process.exit(3)'] } }, log);
    try {
      expect(servers.sources.map((s) => s.name)).toEqual(['mcp:fixture']);
      expect(servers.tools().some((t) => t.name.startsWith('gone__') || t.name.startsWith('quits__'))).toBe(false);
      expect(log.lines.join('\n')).toMatch(/MCP server 'gone' could not be started: .*ENOENT.*; its tools are not offered/);
      expect(log.lines).toContain("MCP server 'quits' could not be started: it exited (code 3); its tools are not offered");
    } finally {
      await servers.close();
    }
    await expect(start({ quits: { command: process.execPath, args: ['-e', 'process.exit(3)'], required: true } })).rejects.toMatchObject({
      code: 'McpServerUnavailable',
      message: "MCP server 'quits' could not be started: it exited (code 3) (mcpServers.quits is required)",
    });
  });

  it('refuses a bad config with a typed error', async () => {
    await expect(start({ 'a__b': fixture() })).rejects.toMatchObject({ code: 'InvalidMcpServers' });
    await expect(start({ x: { command: 'x', url: 'http://a' } as never })).rejects.toMatchObject({ code: 'InvalidMcpServers' });
    await expect(start({ x: { url: 'ftp://a' } })).rejects.toMatchObject({ code: 'InvalidMcpServers' });
  });
});

describe('environment', () => {
  it('gives a server the default few variables and what its config names, never the host’s secrets', async () => {
    process.env.TURNCHART_API_KEY = 'sk-host-api-key-123456';
    process.env.MCP_TEST_UNNAMED = 'not passed';
    try {
      const { servers } = await start({ fixture: fixture({ env: { FIXTURE_SETTING: 'on' } }) });
      try {
        const env = JSON.parse((await run(toolNamed(servers, 'fixture__env'), {})).content) as Record<string, string>;
        expect(env.FIXTURE_SETTING).toBe('on');
        expect(env.PATH).toBe(process.env.PATH);
        expect(env.MCP_TEST_UNNAMED).toBeUndefined();
        expect(Object.keys(env).filter((name) => /^TURNCHART_|^DATABASE_URL$/.test(name))).toEqual([]);
        expect(JSON.stringify(env)).not.toContain('sk-host-api-key-123456');
        expect(env.RUN_COMMAND_ID).toMatch(/^mcp-/);
      } finally {
        await servers.close();
      }
      await expect(start({ fixture: fixture({ env: { TURNCHART_TOKEN: 'x' } }) })).rejects.toMatchObject({
        code: 'InvalidMcpServers',
        message: expect.stringContaining('mcpServers.fixture.env: TURNCHART_TOKEN is never passed') as unknown,
      });
      await expect(start({ fixture: fixture({ env: { KEY: 'sk-host-api-key-123456' } }) })).rejects.toMatchObject({
        message: expect.stringContaining('KEY is never passed to an MCP server: its value holds one of the host') as unknown,
      });
      await expect(start({ fixture: fixture({ env: { DB: 'postgres://u:pw@db/x' } }) }, new WarnLog(), ['postgres://u:pw@db/x'])).rejects.toMatchObject({
        code: 'InvalidMcpServers',
      });
    } finally {
      delete process.env.TURNCHART_API_KEY;
      delete process.env.MCP_TEST_UNNAMED;
    }
  });
});

describe('close', () => {
  it('ends the server and what it started, and removes its ledger entry', async () => {
    const { servers } = await start({ fixture: fixture() });
    const pid = servers.connections[0]!.pid!;
    const grandchild = Number((await run(toolNamed(servers, 'fixture__spawn_child'), {})).content);
    expect(await isRunning(pid)).toBe(true);
    expect(await isRunning(grandchild)).toBe(true);
    expect((await readdir(ledger.dir)).some((name) => name.startsWith('mcp-'))).toBe(true);
    await servers.close();
    expect(await isRunning(pid)).toBe(false);
    expect(await isRunning(grandchild)).toBe(false);
    expect((await readdir(ledger.dir)).filter((name) => name.startsWith('mcp-'))).toEqual([]);
    expect(await run(toolNamed(servers, 'fixture__echo'), { text: 'x' })).toEqual({ status: 'failed', content: "MCP server 'fixture' is closed" });
  });
});
