import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { serveSettings, serveUsage } from '../../src/cli/serve.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';

/**
 * Issue 22, finding 5 (the host's part): `run_command "cat /proc/$PPID/cmdline"` printed the
 * host's `--token`. The token and the database URL can come from a file now, and once the flags
 * are read the host's own command line no longer shows the secrets among them.
 */

describe('host secrets', () => {
  let dir: string | undefined;
  let host: HostProcess | undefined;
  afterEach(async () => {
    host?.kill('SIGKILL');
    await host?.exited;
    if (dir) await rm(dir, { recursive: true, force: true });
    [dir, host] = [undefined, undefined];
  });
  const tempDir = async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-secrets-')));

  it.skipIf(process.platform !== 'linux')("keeps --token out of the host process's /proc/PID/cmdline once it listens, and still requires it", async () => {
    const root = await tempDir();
    const token = `tok-${Math.random().toString(36).slice(2)}-secret`;
    host = await spawnHost(['--db', path.join(root, 'db.sqlite'), '--workspace', root, '--token', token]);
    const cmdline = (await readFile(`/proc/${host.child.pid}/cmdline`, 'latin1')).replaceAll('\0', ' ');
    expect(cmdline).not.toContain(token);
    expect(cmdline).toContain('turnchart serve');
    expect(cmdline).toContain('--token ***');
    expect((await call(host.url, 'GET', '/sessions')).status).toBe(401);
    expect((await call(host.url, 'GET', '/sessions', undefined, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('reads the token and the database URL from files, without the line ending, flags over variables', async () => {
    const root = await tempDir();
    const tokenFile = path.join(root, 'token');
    const urlFile = path.join(root, 'url');
    await writeFile(tokenFile, 'from-a-file\n');
    await writeFile(urlFile, 'postgres://turnchart:pw@db/turnchart\r\n');
    expect(serveSettings(['--token-file', tokenFile, '--database-url-file', urlFile], {})).toMatchObject({ token: 'from-a-file', 'database-url': 'postgres://turnchart:pw@db/turnchart' });
    expect(serveSettings([], { TURNCHART_TOKEN_FILE: tokenFile, DATABASE_URL_FILE: urlFile })).toMatchObject({ token: 'from-a-file', 'database-url': 'postgres://turnchart:pw@db/turnchart' });

    const empty = path.join(root, 'empty');
    await writeFile(empty, '\n');
    expect(() => serveSettings(['--token-file', empty], {})).toThrow(`--token-file (TURNCHART_TOKEN_FILE): ${empty} is empty`);
    expect(() => serveSettings([], { DATABASE_URL_FILE: empty })).toThrow(`--database-url-file (DATABASE_URL_FILE): ${empty} is empty`);
    expect(() => serveSettings(['--token-file', path.join(root, 'missing')], {})).toThrow(/^--token-file \(TURNCHART_TOKEN_FILE\): cannot read .*missing/);
    expect(() => serveSettings(['--token-file', tokenFile], { TURNCHART_TOKEN: 'x' })).toThrow('--token (TURNCHART_TOKEN) and --token-file (TURNCHART_TOKEN_FILE) are both set; give one');
  });

  it('counts an empty variable as unset for every flag, and names the flag and its variable when a value is wrong', () => {
    const variables = [...serveUsage().matchAll(/\[([A-Z_]+)\]$/gm)].map((match) => match[1]!);
    expect(variables).toContain('TURNCHART_TOKEN');
    expect(variables).toContain('TURNCHART_MAX_STREAMS');
    const unset = serveSettings([], {});
    expect(serveSettings([], Object.fromEntries([...variables, 'TURNCHART_API_KEY'].map((name) => [name, '']))), 'every variable empty').toEqual(unset);
    expect(unset).toMatchObject({ host: '127.0.0.1', port: 4477, 'allowed-hosts': [] });
    expect(unset.token).toBeUndefined();

    expect(() => serveSettings(['--token', ''], {})).toThrow(/^--token \(TURNCHART_TOKEN\): /);
    expect(() => serveSettings(['--port', 'eighty'], {})).toThrow(/^--port \(TURNCHART_PORT\): /);
    expect(() => serveSettings([], { TURNCHART_MAX_SESSIONS: '0' })).toThrow(/^--max-sessions \(TURNCHART_MAX_SESSIONS\): /);
    expect(() => serveSettings(['--max-streams', '1.5'], {})).toThrow(/^--max-streams \(TURNCHART_MAX_STREAMS\): /);
    expect(() => serveSettings(['--allowed-hosts', 'ok.example,evil.example:80'], {})).toThrow(/^--allowed-hosts \(TURNCHART_ALLOWED_HOSTS\): /);
    expect(serveSettings([], { TURNCHART_ALLOWED_HOSTS: ' API.example , [FD00::1],10.0.0.5,' })['allowed-hosts']).toEqual(['api.example', '[fd00::1]', '10.0.0.5']);
  });
});
