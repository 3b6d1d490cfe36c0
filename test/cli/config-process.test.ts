import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundled } from '../support/bundles.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { logLines, logMessages } from '../support/log-lines.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
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
    // Found once the settings are read: said in the log (JSON, stderr not being a terminal), as its last line.
    expect(logLines(output).at(-1)).toMatchObject({ level: 'fatal', msg: "bad.ts: agents.reviewer.model: no model named 'gpt5'; models are: default, local" });
    expect(output).not.toContain('listening');
  });

  it("a config importing 'turnchart' where it is not installed: the host says how to fix it", async () => {
    const own = await mkdtemp(path.join(dir, 'no-package-'));
    await writeFile(path.join(own, 'turnchart.config.ts'), "import { defineConfig } from 'turnchart';\nexport default defineConfig({ port: 0 });\n");
    const { code, output } = await runCli(['serve', '--db', path.join(own, 't.db')], own);
    expect(code).toBe(2);
    expect(output).toMatch(/turnchart: turnchart\.config\.ts: cannot load it: Cannot find (module|package) 'turnchart'.*npm i turnchart.*drop the import/);
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
      expect(logMessages(host.stderr())).toContainEqual(expect.stringMatching(/^config: examples\/turnchart\.config\.ts; agents: reviewer, builder/));
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

  it("a TypeScript config in a CommonJS project importing the installed package loads (the package's exports serve require too)", async () => {
    // As `npm i turnchart` leaves it: the package in node_modules, the project's package.json saying CommonJS (npm init's default).
    const project = await mkdtemp(path.join(dir, 'installed-'));
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'my-agents', type: 'commonjs' }));
    const installed = path.join(project, 'node_modules', 'turnchart');
    await mkdir(installed, { recursive: true });
    // Its package.json a file of its own (a link would resolve to the checkout); its code the checkout's build.
    await copyFile(path.join(ROOT, 'package.json'), path.join(installed, 'package.json'));
    for (const part of ['dist', 'machines', 'src', 'storage']) await symlink(path.join(ROOT, part), path.join(installed, part), 'dir');
    // A value out of range: the file must load for the host to get as far as checking it (run from the project, whose lack of a tsconfig makes tsx compile the file as CommonJS).
    await writeFile(path.join(project, 'turnchart.config.ts'), "import { defineConfig } from 'turnchart';\nexport default defineConfig({ idleTtl: -1 });\n");
    const { code, output } = await runCli(['serve', '--db', path.join(project, 't.db')], project);
    expect(output).not.toContain('cannot load it');
    expect(output).toMatch(/turnchart: turnchart\.config\.ts: idleTtl: Too small/);
    expect(code).toBe(2);
  });
});
