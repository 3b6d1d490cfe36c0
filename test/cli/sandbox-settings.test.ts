/**
 * Issue 25: `--sandbox auto|bwrap|off` (`TURNCHART_SANDBOX`, the file's `sandbox`) for serve, the
 * embedded chat and the worker, and an agent's `sandbox: { network }` in the configuration file.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatSettings } from '../../src/cli/chat.js';
import { embeddedChatClient } from '../../src/cli/chat-embedded.js';
import { ConfigError, loadConfigFile, type LoadedConfig } from '../../src/cli/config-file.js';
import { resolveConfig } from '../../src/cli/config-resolve.js';
import { serveSettings } from '../../src/cli/serve.js';
import { workerSettings } from '../../src/cli/worker.js';
import { resolveAgents } from '../../src/runtime/agents.js';
import { workspaceTools } from '../../src/tools/workspace/index.js';

const runCommand = workspaceTools({ root: os.tmpdir(), warn: () => undefined }).find((tool) => tool.name === 'run_command')!;
const bwrap = runCommand.sandbox?.kind === 'bwrap';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-sandbox-config-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function load(config: unknown): Promise<LoadedConfig> {
  const own = await mkdtemp(path.join(dir, 'case-'));
  const file = path.join(own, 'turnchart.config.json');
  await writeFile(file, JSON.stringify(config));
  return loadConfigFile('turnchart.config.json', file);
}

const helper = { description: 'helps', instructions: 'You help.' };

describe('--sandbox', () => {
  it('serve: auto by default; the flag over TURNCHART_SANDBOX over the file; anything else names the flag and its variable', async () => {
    expect(serveSettings([], {}).sandbox).toBe('auto');
    expect(serveSettings(['--sandbox', 'off'], {}).sandbox).toBe('off');
    expect(serveSettings([], { TURNCHART_SANDBOX: 'bwrap' }).sandbox).toBe('bwrap');
    const file = await load({ sandbox: 'off' });
    expect(serveSettings([], {}, file).sandbox).toBe('off');
    expect(serveSettings([], { TURNCHART_SANDBOX: 'bwrap' }, file).sandbox).toBe('bwrap');
    expect(serveSettings(['--sandbox', 'auto'], { TURNCHART_SANDBOX: 'bwrap' }, file).sandbox).toBe('auto');
    expect(() => serveSettings(['--sandbox', 'docker'], {})).toThrow(/^--sandbox \(TURNCHART_SANDBOX\): /);
  });

  it('the file refuses a sandbox that is none of the three, naming the key', async () => {
    await expect(load({ sandbox: 'on' })).rejects.toThrow(ConfigError);
    await expect(load({ sandbox: 'on' })).rejects.toThrow(/^turnchart\.config\.json: sandbox: /);
  });

  it('chat: embedded only; worker: as for serve', () => {
    expect(chatSettings([], {}).sandbox).toBe('auto');
    expect(chatSettings(['--sandbox', 'bwrap'], {}).sandbox).toBe('bwrap');
    expect(() => chatSettings(['--url', 'http://127.0.0.1:4477', '--sandbox', 'off'], {})).toThrow('--sandbox applies only to the embedded chat, not with --url');
    expect(workerSettings(['--amqp-url', 'amqp://127.0.0.1', '--sandbox', 'off'], {}).sandbox).toBe('off');
    expect(workerSettings([], { TURNCHART_AMQP_URL: 'amqp://127.0.0.1' }).sandbox).toBe('auto');
  });
});

describe("an agent's sandbox", () => {
  it('sandbox.network from the file reaches the runtime agent; without it, no network', async () => {
    const resolved = await resolveConfig(await load({ agents: { fetcher: { ...helper, sandbox: { network: true } }, reader: helper } }), { provider: {} });
    expect(resolved.agents.fetcher).toMatchObject({ sandbox: { network: true } });
    const agents = resolveAgents(resolved.agents);
    expect(agents.fetcher!.sandbox).toEqual({ network: true });
    expect(agents.reader!.sandbox).toEqual({ network: false });
    expect(agents.default!.sandbox).toEqual({ network: false });
    expect(resolveAgents({ quiet: { sandbox: {} } }).quiet!.sandbox).toEqual({ network: false });
  });

  it('refuses an unknown sandbox key, naming the agent', async () => {
    await expect(load({ agents: { fetcher: { ...helper, sandbox: { net: true } } } })).rejects.toThrow(/^turnchart\.config\.json: agents\.fetcher\.sandbox: /);
    expect(() => resolveAgents({ fetcher: { sandbox: { network: 'yes' as unknown as boolean } } })).toThrow();
  });
});

describe.skipIf(!bwrap)('the embedded chat', () => {
  it('runs its commands in the sandbox it is given', { timeout: 30_000 }, async () => {
    const workspace = await mkdtemp(path.join(dir, 'ws-'));
    const script = path.join(dir, `model-${path.basename(workspace)}.json`);
    const command = 'echo $$ > pid; touch /etc/turnchart-embedded-sandbox 2> err; echo done';
    await writeFile(script, JSON.stringify([{ text: 'trying', toolCalls: [{ name: 'run_command', args: { command } }] }, { text: 'done' }]));
    const client = await embeddedChatClient({ db: path.join(workspace, '.turnchart', 'chat.db'), workspace, model: `scripted:${script}`, sandbox: 'bwrap' });
    try {
      const { sessionId } = await client.createSession({ permissionMode: 'auto' });
      const { turnId } = await client.submitTurn(sessionId, { clientRequestId: 'c1', input: [{ type: 'text', text: 'go' }] });
      expect(await client.runtime.openHandle(sessionId)!.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
      expect(await readFile(path.join(workspace, 'pid'), 'utf8')).toBe('2\n');
      expect(await readFile(path.join(workspace, 'err'), 'utf8')).toContain('Read-only file system');
    } finally {
      await client.close();
    }
  });
});
