import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundled } from '../../support/bundles.js';
import { McpServers, type McpServersConfig, type McpServersOptions } from '../../../src/tools/mcp/index.js';
import { run, tempDir, toolNamed, WarnLog } from './support.js';

/**
 * `scope: "session"` against the fixture server over stdio: each session's calls reach a process of
 * its own (the fixture's `pid` tool says which), closed by `closeSession`, when idle (a clock of the
 * test's own: no sleeps), past the cap, and by `close`. Host scope still shares one process.
 */

const fixture = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [bundled('mcp-fixture-server')], ...extra });

let ledger: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ledger = await tempDir('turnchart-mcp-session-ledger-');
});
afterAll(async () => {
  await ledger.remove();
});

/** Timers the test fires by hand. */
class ManualClock {
  readonly timers: { callback: () => void; ms: number; cancelled: boolean }[] = [];
  readonly schedule = (callback: () => void, ms: number): (() => void) => {
    const timer = { callback, ms, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };

  armed(): { callback: () => void; ms: number }[] {
    return this.timers.filter((timer) => !timer.cancelled);
  }
}

async function start(config: McpServersConfig, options: Partial<McpServersOptions> = {}) {
  const log = new WarnLog();
  const servers = await McpServers.start(config, { warn: log.warn, ledgerDir: ledger.dir, killGraceMs: 500, ...options });
  return { servers, log };
}

async function pidOf(servers: McpServers, sessionId: string): Promise<number> {
  const result = await run(toolNamed(servers, 'fixture__pid'), {}, { sessionId });
  expect(result.status).toBe('succeeded');
  return Number(result.content);
}

/** process.kill(pid, 0) throws ESRCH once the process is gone (and reaped). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

describe('scope: "session"', () => {
  it('offers the catalog’s tools without a warning, and gives each session a process of its own (never the catalog’s)', async () => {
    const { servers, log } = await start({ fixture: fixture({ scope: 'session' }) });
    try {
      expect(servers.sources.map((s) => s.name)).toEqual(['mcp:fixture']);
      expect(servers.tools().map((t) => t.name)).toEqual(expect.arrayContaining(['fixture__echo', 'fixture__pid']));
      expect(log.lines.join('\n')).not.toMatch(/not implemented/);
      const catalog = servers.connections[0]!.pid!;
      const a1 = await pidOf(servers, 'a');
      const b1 = await pidOf(servers, 'b');
      const a2 = await pidOf(servers, 'a');
      const b2 = await pidOf(servers, 'b');
      expect(a1).not.toBe(b1);
      expect(a2).toBe(a1);
      expect(b2).toBe(b1);
      expect([a1, b1]).not.toContain(catalog);
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual(['a', 'b']);
      expect(await run(toolNamed(servers, 'fixture__echo'), { text: 'mine' }, { sessionId: 'a' })).toEqual({ status: 'succeeded', content: 'mine' });
    } finally {
      await servers.close();
    }
  });

  it('closeSession ends that session’s process only; its next call starts another', async () => {
    const { servers } = await start({ fixture: fixture({ scope: 'session' }) });
    try {
      const a = await pidOf(servers, 'a');
      const b = await pidOf(servers, 'b');
      await servers.closeSession('a');
      expect(gone(a)).toBe(true);
      expect(gone(b)).toBe(false);
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual(['b']);
      await servers.closeSession('never-called'); // nothing to close
      const again = await pidOf(servers, 'a');
      expect(again).not.toBe(a);
      expect(await pidOf(servers, 'b')).toBe(b);
    } finally {
      await servers.close();
    }
  });

  it('closes a session’s connection once unused for sessionIdleMs, and not while it is used', async () => {
    const clock = new ManualClock();
    const { servers, log } = await start({ fixture: fixture({ scope: 'session' }) }, { sessionIdleMs: 1234, schedule: clock.schedule });
    try {
      const a = await pidOf(servers, 'a');
      expect(clock.armed().map((t) => t.ms)).toEqual([1234]);
      // A second call restarts the idle time: the first timer is cancelled, another armed.
      expect(await pidOf(servers, 'a')).toBe(a);
      expect(clock.armed()).toHaveLength(1);
      // While a call is under way no idle timer runs; it is armed again once the call ends.
      const abort = new AbortController();
      const hang = run(toolNamed(servers, 'fixture__hang'), {}, { sessionId: 'a', signal: abort.signal });
      await log.waitFor(/hang: started request/);
      expect(clock.armed()).toEqual([]);
      abort.abort();
      expect((await hang).status).toBe('cancelled');
      expect(clock.armed()).toHaveLength(1);
      clock.armed()[0]!.callback();
      await servers.sessionConnections('fixture')!.settled();
      expect(gone(a)).toBe(true);
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual([]);
      expect(await pidOf(servers, 'a')).not.toBe(a);
    } finally {
      await servers.close();
    }
  });

  it('past maxSessionConnections, closes the least recently used first', async () => {
    const { servers } = await start({ fixture: fixture({ scope: 'session' }) }, { maxSessionConnections: 2 });
    try {
      const a = await pidOf(servers, 'a');
      const b = await pidOf(servers, 'b');
      expect(await pidOf(servers, 'a')).toBe(a); // b is now the least recently used
      const c = await pidOf(servers, 'c');
      await servers.sessionConnections('fixture')!.settled();
      expect(gone(b)).toBe(true);
      expect(gone(a)).toBe(false);
      expect(gone(c)).toBe(false);
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual(['a', 'c']);
    } finally {
      await servers.close();
    }
  });

  it('past maxSessionConnections, never cuts off a call under way: the new session’s call fails until one ends', async () => {
    const { servers, log } = await start({ fixture: fixture({ scope: 'session' }) }, { maxSessionConnections: 2 });
    try {
      const hangs = ['a', 'b'].map((sessionId) => {
        const abort = new AbortController();
        return { abort, result: run(toolNamed(servers, 'fixture__hang'), {}, { sessionId, signal: abort.signal }) };
      });
      await log.waitFor(/hang: started request/, 2);
      const [a, b] = [servers.sessionConnections('fixture')!.connection('a')!.pid!, servers.sessionConnections('fixture')!.connection('b')!.pid!];
      expect(await run(toolNamed(servers, 'fixture__pid'), {}, { sessionId: 'c' })).toEqual({
        status: 'failed',
        content: "MCP server 'fixture': all 2 of its session connections have a call under way; try again when one ends",
      });
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual(['a', 'b']);
      expect([gone(a), gone(b)]).toEqual([false, false]);
      // a's call ends: its connection is idle, and the least recently used idle one goes for c's.
      hangs[0]!.abort.abort();
      expect((await hangs[0]!.result).status).toBe('cancelled');
      const c = await pidOf(servers, 'c');
      await servers.sessionConnections('fixture')!.settled();
      expect(gone(a)).toBe(true);
      expect(gone(c)).toBe(false);
      expect(servers.sessionConnections('fixture')!.sessions()).toEqual(['b', 'c']);
      hangs[1]!.abort.abort();
      expect((await hangs[1]!.result).status).toBe('cancelled');
    } finally {
      await servers.close();
    }
  });

  it('close leaves no process: the catalog’s and every session’s end; later calls fail', async () => {
    const { servers } = await start({ fixture: fixture({ scope: 'session' }) });
    const catalog = servers.connections[0]!.pid!;
    const pids = [await pidOf(servers, 'a'), await pidOf(servers, 'b'), await pidOf(servers, 'c')];
    await servers.close();
    for (const pid of [catalog, ...pids]) expect(gone(pid)).toBe(true);
    expect(await run(toolNamed(servers, 'fixture__pid'), {}, { sessionId: 'a' })).toEqual({ status: 'failed', content: "MCP server 'fixture' is closed" });
  });

  it('a session’s server that exits fails the call and is started again on its next one, the other sessions untouched', async () => {
    const { servers } = await start({ fixture: fixture({ scope: 'session' }) });
    try {
      const a = await pidOf(servers, 'a');
      const b = await pidOf(servers, 'b');
      expect(await run(toolNamed(servers, 'fixture__crash'), {}, { sessionId: 'a' })).toEqual({ status: 'failed', content: "MCP server 'fixture' exited (code 1)" });
      const again = await pidOf(servers, 'a');
      expect(again).not.toBe(a);
      expect(await pidOf(servers, 'b')).toBe(b);
    } finally {
      await servers.close();
    }
  });
});

describe('scope: "host"', () => {
  it('still shares one process across sessions; closeSession leaves it running', async () => {
    const { servers } = await start({ fixture: fixture() });
    try {
      const pid = servers.connections[0]!.pid!;
      expect(await pidOf(servers, 'a')).toBe(pid);
      expect(await pidOf(servers, 'b')).toBe(pid);
      await servers.closeSession('a');
      expect(gone(pid)).toBe(false);
      expect(await pidOf(servers, 'a')).toBe(pid);
      expect(servers.sessionConnections('fixture')).toBeUndefined();
    } finally {
      await servers.close();
    }
  });
});
