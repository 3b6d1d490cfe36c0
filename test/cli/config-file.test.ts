import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatSettings } from '../../src/cli/chat.js';
import { ConfigError, configPathOf, loadConfigFile, secretsWrittenIn, type LoadedConfig } from '../../src/cli/config-file.js';
import { resolveConfig } from '../../src/cli/config-resolve.js';
import { SETTING_KEYS } from '../../src/cli/config-schema.js';
import { serveSettings, serveUsage } from '../../src/cli/serve.js';
import { keyOfFlag } from '../../src/cli/setting-layers.js';
import { workerSettings } from '../../src/cli/worker.js';
import { WORKSPACE_TOOL_NAMES } from '../../src/tools/workspace/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-config-'));
  await mkdir(path.join(dir, 'prompts'));
  await writeFile(path.join(dir, 'prompts', 'helper.md'), 'You help.\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Writes a file in its own directory and loads it as the command line would find it there. */
async function load(name: string, text: string): Promise<LoadedConfig> {
  const own = await mkdtemp(path.join(dir, 'case-'));
  await mkdir(path.join(own, 'prompts'));
  await writeFile(path.join(own, 'prompts', 'helper.md'), 'You help.\n');
  await writeFile(path.join(own, name), text);
  const found = configPathOf([], {}, own);
  expect(found?.name).toBe(name);
  return loadConfigFile(found!.name, found!.path);
}

const json = (config: unknown) => JSON.stringify(config, null, 2);
const resolveIt = (loaded: LoadedConfig) => resolveConfig(loaded, { provider: {} });

/** The message a load or resolve fails with. */
async function problem(name: string, config: unknown): Promise<string> {
  try {
    await resolveIt(await load(name, json(config)));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

const helper = { description: 'helps', instructions: 'You help.' };

describe('configuration file: formats', () => {
  it('loads a TypeScript file with a type import and defineConfig, without a build step', async () => {
    const loaded = await load(
      'turnchart.config.ts',
      [
        `import type { TurnchartConfig } from '${path.join(ROOT, 'src/index.ts')}';`,
        `import { defineConfig } from '${path.join(ROOT, 'src/cli/define-config.ts')}';`,
        `const port: number = 4999;`,
        `const agents: TurnchartConfig['agents'] = { helper: { description: 'helps', instructions: { file: 'prompts/helper.md' } } };`,
        `export default defineConfig({ port, idleTtl: 12, agents });`,
      ].join('\n'),
    );
    expect(loaded.config.port).toBe(4999);
    const resolved = await resolveIt(loaded);
    expect(resolved.agents.helper?.systemPrompt).toBe('You help.\n');
    expect(resolved.model.description).toMatch(/demo model/);
    expect(serveSettings([], {}, loaded)).toMatchObject({ port: 4999, 'idle-ttl': 12 });
  });

  it('loads an ES module (.mjs) by its default export', async () => {
    const loaded = await load('turnchart.config.mjs', `export default { port: 4998, agents: { helper: ${json(helper)} } };\n`);
    expect(serveSettings([], {}, loaded).port).toBe(4998);
    expect(Object.keys((await resolveIt(loaded)).agents)).toEqual(['helper', 'default', 'explorer']);
  });

  it('gives an agent only the MCP servers and file tools it lists; the others, and the built-in agents, keep to the workspace tools', async () => {
    const loaded = await load(
      'turnchart.config.json',
      json({ mcpServers: { github: { command: 'true' } }, agents: { triage: { ...helper, mcp: ['github'] }, plain: helper, reader: { ...helper, tools: ['read_file'] } } }),
    );
    const { agents } = await resolveIt(loaded);
    const workspace = [...WORKSPACE_TOOL_NAMES];
    expect(agents.triage?.tools).toEqual([...workspace, 'github__*']);
    expect(agents.plain?.tools).toEqual(workspace);
    expect(agents.reader?.tools).toEqual(['read_file']);
    expect(agents.default?.tools).toEqual(workspace);
    expect(agents.explorer?.tools).toEqual(workspace);
  });

  it('loads JSON', async () => {
    const loaded = await load('turnchart.config.json', json({ port: 4997, permissionMode: 'auto', commandEnv: ['GIT_AUTHOR_NAME'] }));
    expect(serveSettings([], {}, loaded)).toMatchObject({ port: 4997, 'permission-mode': 'auto', 'command-env': ['GIT_AUTHOR_NAME'] });
  });

  it("gives an agent the runtime's plain settings: parallel calls, agents to switch to, a retry policy, limits", async () => {
    const settings = {
      parallelToolCalls: 3,
      switchTo: ['reviewer'],
      retryPolicy: { maxAttempts: 3, backoffMs: 100, on: ['timeout'] },
      maxModelCalls: 12,
      runTimeoutMs: 60_000,
      toolTimeoutMs: 5_000,
      doomLoopThreshold: 4,
      approvalTimeoutMs: 30_000,
      resume: false,
    };
    const loaded = await load('turnchart.config.json', json({ agents: { builder: { ...helper, ...settings }, reviewer: helper } }));
    const { agents } = await resolveIt(loaded);
    expect(agents.builder).toMatchObject(settings);
    expect(Object.keys(agents.reviewer!)).not.toContain('parallelToolCalls');
  });

  it('a module without a default export, and two files in one directory, are refused by name', async () => {
    await expect(load('turnchart.config.mjs', 'export const port = 1;\n')).rejects.toThrow('turnchart.config.mjs: it has no default export');
    const both = await mkdtemp(path.join(dir, 'both-'));
    await writeFile(path.join(both, 'turnchart.config.json'), '{}');
    await writeFile(path.join(both, 'turnchart.config.mjs'), 'export default {};');
    expect(() => configPathOf([], {}, both)).toThrow(/more than one configuration file/);
  });

  it('--config and TURNCHART_CONFIG name the file (the flag first); an empty variable is unset; a missing file is an error', async () => {
    const own = await mkdtemp(path.join(dir, 'named-'));
    await writeFile(path.join(own, 'a.json'), '{}');
    await writeFile(path.join(own, 'b.json'), '{}');
    expect(configPathOf(['--config', 'a.json'], { TURNCHART_CONFIG: 'b.json' }, own)?.name).toBe('a.json');
    expect(configPathOf(['--port', '0'], { TURNCHART_CONFIG: 'b.json' }, own)?.name).toBe('b.json');
    expect(configPathOf([], { TURNCHART_CONFIG: '' }, own)).toBeNull();
    expect(() => configPathOf(['--config', 'nope.ts'], {}, own)).toThrow('nope.ts: no such file (named by --config)');
  });

  it('every serve flag is a key of the file, in camelCase', () => {
    const flags = [...serveUsage().matchAll(/^ {2}--([a-z-]+)/gm)].map((match) => match[1]!).filter((flag) => flag !== 'config');
    expect(flags.length).toBeGreaterThan(25);
    for (const flag of flags) expect(Object.keys(SETTING_KEYS)).toContain(keyOfFlag(flag));
  });
});

describe('configuration file: precedence', () => {
  it('a flag wins over its variable, the variable over the file, the file over the default', async () => {
    const loaded = await load('turnchart.config.json', json({ idleTtl: 7, host: '127.0.0.2' }));
    expect(serveSettings(['--idle-ttl', '5'], { TURNCHART_IDLE_TTL: '6' }, loaded)['idle-ttl']).toBe(5);
    expect(serveSettings([], { TURNCHART_IDLE_TTL: '6' }, loaded)['idle-ttl']).toBe(6);
    expect(serveSettings([], {}, loaded)['idle-ttl']).toBe(7);
    expect(serveSettings([], {}, null)['idle-ttl']).toBe(300);
    // An empty variable is unset: the file's value stands.
    expect(serveSettings([], { TURNCHART_IDLE_TTL: '' }, loaded)['idle-ttl']).toBe(7);
    expect(serveSettings([], {}, loaded).host).toBe('127.0.0.2');
  });

  it('paths in the file are relative to it; token and databaseUrl from the file work, and one written out is reported', async () => {
    const loaded = await load('turnchart.config.json', json({ db: 'data/t.db', workspace: '.', token: 'file-token-123', databaseUrl: 'postgres://u:pw@h/db' }));
    const settings = serveSettings([], {}, loaded);
    expect(settings.db).toBe(path.join(loaded.dir, 'data/t.db'));
    expect(settings.workspace).toBe(loaded.dir);
    expect(settings.token).toBe('file-token-123');
    expect(settings['database-url']).toBe('postgres://u:pw@h/db');
    expect(secretsWrittenIn(loaded)).toEqual(['token', 'databaseUrl']);
    expect(serveSettings([], { TURNCHART_TOKEN: 'env-token' }, loaded).token).toBe('env-token');
  });

  it('--model and TURNCHART_MODEL override the default model of the file; an agent naming its own model keeps it', async () => {
    const script = path.join(dir, 'script.json');
    await writeFile(script, json([{ text: 'hi' }]));
    const loaded = await load('turnchart.config.json', json({ models: { local: `scripted:${script}` }, agents: { helper: { ...helper, model: 'local' } } }));
    const fromFile = await resolveConfig(loaded, { provider: {} });
    expect(fromFile.model.description).toMatch(/scripted model/);
    const settings = serveSettings([], { TURNCHART_MODEL: 'openai-compatible:http://127.0.0.1:9/v1#m' }, loaded);
    expect(settings.modelFromFlags).toBe(true);
    const overridden = await resolveConfig(loaded, { modelOverride: settings.model, provider: {} });
    expect(overridden.model.description).toMatch(/OpenAI-compatible/);
    expect(overridden.notes.helper?.modelDescription).toMatch(/scripted model/);
  });
});

describe('configuration file: errors name the file and the key path', () => {
  it('an unknown model', async () => {
    const message = await problem('turnchart.config.json', { models: { default: 'demo', local: 'demo' }, agents: { reviewer: { ...helper, model: 'gpt5' } } });
    expect(message).toBe("turnchart.config.json: agents.reviewer.model: no model named 'gpt5'; models are: default, local");
  });

  it('an unknown tool', async () => {
    const message = await problem('turnchart.config.json', { agents: { reviewer: { ...helper, tools: ['read_file', 'read'] } } });
    expect(message).toMatch(/^turnchart\.config\.json: agents\.reviewer\.tools\.1: no tool named 'read'; tools are: read_file, list_dir, grep/);
  });

  it('an agent to switch to that does not exist, and a setting out of its range', async () => {
    const message = await problem('turnchart.config.json', { agents: { builder: { ...helper, switchTo: ['revewer'] } } });
    expect(message).toBe("turnchart.config.json: agents.builder.switchTo.0: no agent named 'revewer'; agents are: builder, default, explorer");
    expect(await problem('turnchart.config.json', { agents: { builder: { ...helper, parallelToolCalls: 0 } } })).toMatch(/^turnchart\.config\.json: agents\.builder\.parallelToolCalls: /);
    expect(await problem('turnchart.config.json', { agents: { builder: { ...helper, retryPolicy: { maxAttempts: 3, backoffMs: 1, on: ['sometimes'] } } } })).toMatch(
      /^turnchart\.config\.json: agents\.builder\.retryPolicy\.on\.0: /,
    );
  });

  it('an unknown MCP server', async () => {
    const message = await problem('turnchart.config.json', { mcpServers: { github: { command: 'true' } }, agents: { reviewer: { ...helper, mcp: ['gh'] } } });
    expect(message).toBe("turnchart.config.json: agents.reviewer.mcp.0: no MCP server named 'gh'; mcpServers are: github");
  });

  it('an instructions file that cannot be read', async () => {
    const message = await problem('turnchart.config.json', { agents: { reviewer: { description: 'x', instructions: { file: 'prompts/missing.md' } } } });
    expect(message).toMatch(/^turnchart\.config\.json: agents\.reviewer\.instructions\.file: cannot read prompts\/missing\.md: .*ENOENT/);
  });

  it('a bad permission value', async () => {
    const message = await problem('turnchart.config.json', { permissions: { run_command: 'sometimes' } });
    expect(message).toMatch(/^turnchart\.config\.json: permissions\.run_command: Invalid option: expected one of "allow"\|"ask"\|"deny"/);
    const agentLevel = await problem('turnchart.config.json', { agents: { reviewer: { ...helper, permissions: { write_file: 'never' } } } });
    expect(agentLevel).toMatch(/^turnchart\.config\.json: agents\.reviewer\.permissions\.write_file: Invalid option/);
  });

  it('an unknown key, and a value of the wrong type or range, each with where it is', async () => {
    expect(await problem('turnchart.config.json', { prot: 1 })).toMatch(/^turnchart\.config\.json: : Unrecognized key|^turnchart\.config\.json: Unrecognized key.*\(prot\)/);
    expect(await problem('turnchart.config.json', { port: '4477' })).toMatch(/^turnchart\.config\.json: port: Invalid input: expected number/);
    const loaded = await load('turnchart.config.json', json({ port: 99_999 }));
    expect(() => serveSettings([], {}, loaded)).toThrow(/^turnchart\.config\.json: port: Too big/);
  });
});

describe('flags and environment variables', () => {
  it('an empty variable counts as unset, for serve, worker and chat', () => {
    expect(serveSettings([], { TURNCHART_TOKEN: '', TURNCHART_PORT: '' })).toMatchObject({ token: undefined, port: 4477 });
    expect(() => workerSettings([], { TURNCHART_AMQP_URL: 'amqp://h', TURNCHART_CONCURRENCY: '', DATABASE_URL: '' })).not.toThrow();
    expect(workerSettings([], { TURNCHART_AMQP_URL: 'amqp://h', TURNCHART_CONCURRENCY: '' }).concurrency).toBe(4);
    expect(chatSettings([], { TURNCHART_URL: '', TURNCHART_MODEL: '' }).url).toBeUndefined();
  });

  it('an invalid flag or variable names the flag and its variable', () => {
    expect(() => serveSettings(['--port', 'x'], {})).toThrow(/^--port \(TURNCHART_PORT\): /);
    expect(() => serveSettings([], { TURNCHART_IDLE_TTL: '-1' })).toThrow(/^--idle-ttl \(TURNCHART_IDLE_TTL\): /);
    expect(() => workerSettings([], { TURNCHART_AMQP_URL: '' })).toThrow(/^--amqp-url \(TURNCHART_AMQP_URL\): set --amqp-url or TURNCHART_AMQP_URL/);
    expect(() => workerSettings([], { TURNCHART_AMQP_URL: 'amqp://h', TURNCHART_CONCURRENCY: 'many' })).toThrow(/^--concurrency \(TURNCHART_CONCURRENCY\): /);
    expect(() => chatSettings(['--mode', 'sometimes'], {})).toThrow(/^--mode: /);
    expect(() => chatSettings([], { TURNCHART_URL: 'ftp://h' })).toThrow(/^--url \(TURNCHART_URL\): /);
  });
});

describe('examples/turnchart.config.ts', () => {
  it('loads and validates, and runs on the demo model without a models key', async () => {
    const found = configPathOf(['--config', 'examples/turnchart.config.ts'], {}, ROOT);
    const loaded = await loadConfigFile(found!.name, found!.path);
    const resolved = await resolveIt(loaded);
    expect(Object.keys(resolved.agents)).toEqual(['reviewer', 'builder', 'default', 'explorer']);
    expect(resolved.model.description).toMatch(/demo model/);
    const reviewer = resolved.agents.reviewer as { systemPrompt?: string; tools?: string[]; permissions?: Record<string, string> };
    expect(reviewer.systemPrompt).toContain('You review code in the workspace and never change it.');
    expect(reviewer.tools).toEqual(['read_file', 'list_dir', 'grep']);
    expect(reviewer.permissions).toMatchObject({ write_file: 'deny', edit_file: 'deny', run_command: 'deny' });
    expect(resolved.notes.builder?.description).toMatch(/Makes the change/);
  });
});
