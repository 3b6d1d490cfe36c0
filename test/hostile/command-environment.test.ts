/**
 * Issue 22, finding 5: `run_command "env; cat /proc/$PPID/cmdline"` printed the host's API key and
 * token, and `/messages`, `/context` and the inspector then served them. A command now gets a
 * minimal environment, and in its own PID namespace (with its own /proc) it cannot read the host's.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqliteFile } from '../support/databases.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { useTempDirs } from '../support/workspace.js';
import { commandContainment } from '../../src/tools/sandbox/containment.js';
import { execute, toolNamed } from '../tools/support.js';

const tempDir = useTempDirs('turnchart-hostile-env-');
const namespaces = commandContainment().kind === 'pid-namespace';

/** What the host holds and no command may print. */
const HOST_SECRETS = {
  TURNCHART_API_KEY: 'sk-test-secret-4c1f9a',
  TURNCHART_TOKEN: 'host-token-77e0b2d5',
  FOO_API_KEY: 'foo-key-0a9d3e',
  MY_SECRET: 'my-secret-58c21b',
  BROKER_URL: 'amqp://user:broker-pw-19ab@mq:5672',
};

describe('a command run by the host sees none of its secrets', { timeout: 60_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it.skipIf(!namespaces)('turnchart serve: env, the host\'s /proc entries and every environ visible print no secret; --command-env passes the one named', async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    // The command reads the host's pid from a file the test writes once the host runs (the script is written before).
    const command =
      'env; echo ---; pid=$(cat host.pid); cat /proc/$pid/environ /proc/$pid/cmdline; echo; echo ---; ls /proc; echo ---; ' +
      'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr "\\0" "\\n" < $f; done';
    const script = path.join(workspace, 'model.json');
    await writeFile(script, JSON.stringify([{ text: 'looking', toolCalls: [{ id: 'env-1', name: 'run_command', args: { command } }] }, { text: 'done' }]));
    const p = await spawnHost(
      ['--db', db.file, '--workspace', workspace, '--model', `scripted:${script}`, '--permission-mode', 'auto', '--command-env', 'GITHUB_TOKEN'],
      { ...HOST_SECRETS, GITHUB_TOKEN: 'gh-allowed-token', DATABASE_URL: '' },
    );
    processes.push(p);
    await writeFile(path.join(workspace, 'host.pid'), String(p.child.pid));
    const auth = { authorization: `Bearer ${HOST_SECRETS.TURNCHART_TOKEN}` };
    try {
      const sessionId = (await call(p.url, 'POST', '/sessions', {}, auth)).body.sessionId as string;
      const turn = await call(p.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'show me' }] }, auth);
      const done = await call(p.url, 'GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}?wait=30`, undefined, auth);
      expect(done.body).toMatchObject({ status: 'completed' });

      const messages = await call(p.url, 'GET', `/sessions/${sessionId}/messages`, undefined, auth);
      const served = JSON.stringify(messages.body);
      const output = (messages.body.messages as { message: { role: string; content?: string } }[]).find((m) => m.message.role === 'tool')!.message.content!;
      // The command ran and printed an environment, then found no host process to read.
      expect(output).toMatch(/^exit code \d+\n/);
      expect(output).toMatch(/^PATH=/m);
      expect(output).toMatch(/^HOME=/m);
      expect(output).toContain('GITHUB_TOKEN=gh-allowed-token');
      expect(output).toContain(`/proc/${p.child.pid}/environ: No such file or directory`);
      for (const [name, secret] of Object.entries(HOST_SECRETS)) {
        expect(output, name).not.toContain(secret);
        expect(served, name).not.toContain(secret);
      }
      expect(output).not.toMatch(/^TURNCHART_/m);
      // The allowed credential-looking name was announced at start.
      expect(p.output()).toContain('passing GITHUB_TOKEN to commands');
    } finally {
      p.kill('SIGKILL');
      await p.exited;
      await db.drop();
    }
  });

  it('workspaceTools: DATABASE_URL, TURNCHART_*, an amqp:// URL, *_API_KEY and *SECRET* stay out; PATH and HOME stay in', async () => {
    const root = await tempDir();
    const secrets = {
      ...HOST_SECRETS,
      DATABASE_URL: 'postgres://app:db-pw-3e1a@db/app',
      TURNCHART_AMQP_URL: 'amqp://tc:amqp-pw-5d2c@mq:5672',
    };
    for (const [name, value] of Object.entries(secrets)) vi.stubEnv(name, value);
    try {
      const tool = toolNamed('run_command', { root });
      const result = await execute(tool, { command: 'env' });
      expect(result.status).toBe('succeeded');
      expect(result.content).toMatch(/^PATH=/m);
      expect(result.content).toMatch(/^HOME=/m);
      for (const [name, secret] of Object.entries(secrets)) {
        expect(result.content, name).not.toContain(secret);
        expect(result.content, name).not.toContain(`${name}=`);
      }
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('the host\'s own secrets cannot be passed even when named; a named credential passes with a warning', async () => {
    const root = await tempDir();
    vi.stubEnv('TURNCHART_API_KEY', 'sk-test-secret-4c1f9a');
    vi.stubEnv('DATABASE_URL', 'postgres://app:db-pw-3e1a@db/app');
    vi.stubEnv('COPY_OF_KEY', 'sk-test-secret-4c1f9a');
    vi.stubEnv('DEPLOY_TOKEN', 'deploy-token-91');
    try {
      expect(() => toolNamed('run_command', { root, commandEnv: ['TURNCHART_API_KEY'] })).toThrow(/TURNCHART_API_KEY is never passed/);
      expect(() => toolNamed('run_command', { root, commandEnv: ['DATABASE_URL'] })).toThrow(/DATABASE_URL is never passed/);
      expect(() => toolNamed('run_command', { root, commandEnv: ['COPY_OF_KEY'] })).toThrow(/holds one of the host's secrets/);
      // A value the host was given as a secret (its --token, say) cannot be passed under another name.
      expect(() => toolNamed('run_command', { root, commandEnv: ['DEPLOY_TOKEN'], hostSecrets: ['deploy-token-91'] })).toThrow(/DEPLOY_TOKEN is never passed/);
      const warnings: string[] = [];
      const tool = toolNamed('run_command', { root, commandEnv: ['DEPLOY_TOKEN'], warn: (message) => warnings.push(message) });
      expect(warnings).toEqual([expect.stringContaining('passing DEPLOY_TOKEN to commands')]);
      expect((await execute(tool, { command: 'echo "$DEPLOY_TOKEN"' })).content).toBe('exit code 0\ndeploy-token-91\n');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
