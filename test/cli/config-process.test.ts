import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundled } from '../support/bundles.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-config-process-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs the bundled `turnchart` to its end: its exit code and everything it printed. */
function runCli(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bundled('cli'), ...args], { cwd, env: { ...process.env, TURNCHART_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('turnchart serve with a configuration file (a real process)', () => {
  it('a bad TypeScript config stops the host before it listens, with the file, the key path and the problem', async () => {
    await writeFile(
      path.join(dir, 'bad.ts'),
      [
        "const models: Record<string, string> = { default: 'demo', local: 'demo' };",
        "export default { models, agents: { reviewer: { description: 'reviews', instructions: 'You review.', model: 'gpt5' } } };",
      ].join('\n'),
    );
    const { code, output } = await runCli(['serve', '--config', 'bad.ts', '--port', '0', '--db', path.join(dir, 'bad.db')], dir);
    expect(code).not.toBe(0);
    expect(output).toContain("turnchart: bad.ts: agents.reviewer.model: no model named 'gpt5'; models are: default, local");
    expect(output).not.toContain('listening');
  });

  it('./turnchart.config.json in the working directory is picked up; a bad value in it names the key', async () => {
    const own = await mkdtemp(path.join(dir, 'cwd-'));
    await writeFile(path.join(own, 'turnchart.config.json'), JSON.stringify({ idleTtl: -5 }));
    const { code, output } = await runCli(['serve', '--port', '0', '--db', path.join(own, 't.db')], own);
    expect(code).toBe(2);
    expect(output).toMatch(/turnchart: turnchart\.config\.json: idleTtl: Too small/);
  });

  it('examples/turnchart.config.ts: GET /agents lists both of its agents', async () => {
    let host: HostProcess | undefined;
    try {
      host = await spawnHost(['--config', 'examples/turnchart.config.ts', '--db', path.join(dir, 'good.db'), '--workspace', dir]);
      expect(host.output()).toContain('turnchart: config: examples/turnchart.config.ts; agents: reviewer, builder');
      const response = await fetch(`${host.url}/agents`);
      const { agents } = (await response.json()) as { agents: { name: string; description: string | null; tools: string[] }[] };
      const names = agents.map((agent) => agent.name);
      expect(names).toEqual(expect.arrayContaining(['reviewer', 'builder']));
      const reviewer = agents.find((agent) => agent.name === 'reviewer')!;
      expect(reviewer.description).toMatch(/never changes anything/);
      expect(reviewer.tools).toEqual(expect.arrayContaining(['read_file', 'list_dir', 'grep']));
      expect(reviewer.tools).not.toContain('write_file');
    } finally {
      host?.kill();
      await host?.exited;
    }
  });
});
