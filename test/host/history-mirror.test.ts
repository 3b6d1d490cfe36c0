import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isHistoryMirror, readHistoryMirror } from '../../storage/history-mirror.js';
import { runChat } from '../../src/cli/chat.js';
import { loadConfigFile } from '../../src/cli/config-file.js';
import { serveSettings } from '../../src/cli/serve.js';
import { defineTool } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';

/**
 * Issue 30, item 6: the history mirror (`--mirror-sqlite`). A run's end copies its session's new
 * messages to a local SQLite file in the same schema, off the run's path; a failed copy is reported
 * through `warn` and made at the next run's end; `turnchart chat --db FILE` browses the file read-only.
 */

const probe = defineTool({
  name: 'probe',
  description: 'answers at once',
  effect: 'read',
  input: z.object({ what: z.string() }),
  execute: async ({ what }) => ({ status: 'succeeded', content: `probed ${what}` }),
});

const say = (clientRequestId: string, text: string) => ({ clientRequestId, input: [{ type: 'text', text }] });

/** The chat's output for these settings, as a pipe gets it (no colour, no spinner), and its exit code. */
async function chatOn(file: string, session?: string): Promise<{ code: number; text: string }> {
  const output = new PassThrough();
  let text = '';
  output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const input = new PassThrough();
  input.end();
  const code = await runChat({ db: file, workspace: '.', 'command-env': [], sandbox: 'off', ...(session && { session }) }, { input, output, env: {} });
  return { code, text };
}

describe.each(durableTargets)('the history mirror on $name (issue 30)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
    host = undefined;
    db = undefined;
    dir = undefined;
  });

  it.skipIf(skip)('copies each ended run\'s messages, retries a failed copy at the next run\'s end, and is browsed read-only by chat --db', async () => {
    db = create();
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-mirror-'));
    const file = path.join(dir, 'mirror.db');
    const warnings: string[] = [];
    host = await testHost(db, [{ text: 'looking', toolCalls: [{ name: 'probe', args: { what: 'the door' } }] }, { text: 'the door is shut' }, { text: 'second answer' }, { text: 'third answer' }], {
      mirrorSqlite: file,
      runtime: { tools: [probe] },
      warn: (message) => void warnings.push(message),
    });
    const h = host;
    const sessionId = await newSession(h);
    const mirrored = async () => {
      const mirror = readHistoryMirror(file);
      try {
        return { messages: await mirror.listMessages(sessionId), turns: await mirror.listTurns(sessionId), audit: await mirror.listAudit(sessionId, { limit: 50 }) };
      } finally {
        await mirror.close();
      }
    };
    const run = async (id: string, text: string) => {
      const accepted = await h.call('POST', `/sessions/${sessionId}/messages`, say(id, text));
      expect(accepted.status).toBe(202);
      expect(await finished(h, sessionId, accepted.body.turnId as string)).toMatchObject({ status: 'completed' });
      return accepted.body;
    };

    const first = await run('m1', 'check the door');
    await until('the mirror to hold every message', async () => {
      const { messages, turns } = await mirrored();
      return messages.length === (await h.storage.listMessages(sessionId)).length && turns[0]?.status === 'completed';
    });
    // The same rows, in the same schema: the messages as stored, the turn ended as it ended, its run kept.
    const copy = await mirrored();
    expect(copy.messages).toEqual(await h.storage.listMessages(sessionId));
    // Each tool result's audit row too: the mirror's audit log is the live one's.
    expect(copy.audit).toHaveLength(1);
    expect(copy.audit).toEqual(await h.storage.listAudit(sessionId, { limit: 50 }));
    expect(copy.turns).toMatchObject([{ id: first.turnId, runId: first.runId, status: 'completed', finalText: 'the door is shut' }]);
    expect(isHistoryMirror(file)).toBe(true);

    // A copy that fails: the run is not held up, the failure is a warning, the session is owed.
    h.storage.failAlways('listTurns');
    await run('m2', 'again');
    await until('the failed copy to be reported', () => warnings.some((w) => w.includes(`history mirror: could not copy session ${sessionId}`)));
    expect((await mirrored()).turns).toHaveLength(1);
    h.storage.heal('listTurns');
    // The next run's end copies what was owed with its own.
    await run('m3', 'once more');
    await until('the owed copy to be made', async () => (await mirrored()).turns.filter((t) => t.status === 'completed').length === 3);
    await until('the mirror to hold every message', async () => (await mirrored()).messages.length === (await h.storage.listMessages(sessionId)).length);
    expect((await mirrored()).messages).toEqual(await h.storage.listMessages(sessionId));
    expect((await mirrored()).audit).toEqual(await h.storage.listAudit(sessionId, { limit: 50 }));
    const before = await mirrored();

    // Offline: the chat lists the mirror's sessions and prints a conversation, and writes nothing.
    const listed = await chatOn(file);
    expect(listed.code).toBe(0);
    expect(listed.text).toContain('read-only');
    expect(listed.text).toContain(sessionId);
    const shown = await chatOn(file, sessionId);
    expect(shown.code).toBe(0);
    for (const line of ['› check the door', '⚙ probe', '↳ probe succeeded', 'the door is shut', '› again', 'second answer', '› once more', 'third answer']) expect(shown.text).toContain(line);
    expect(shown.text.indexOf('› again')).toBeLessThan(shown.text.indexOf('third answer'));
    const missing = await chatOn(file, 'ses_nope');
    expect(missing).toMatchObject({ code: 1, text: expect.stringContaining('UnknownSession') });
    expect(await mirrored()).toEqual(before);
  });

  it.skipIf(skip)('refuses to start when the mirror file cannot be opened', async () => {
    db = create();
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-mirror-'));
    // A directory where the file should be: SQLite cannot open it.
    await expect(testHost(db, [], { mirrorSqlite: dir })).rejects.toThrow();
  });
});

describe('the history mirror\'s setting', () => {
  it('is --mirror-sqlite, TURNCHART_MIRROR_SQLITE, or the config key mirrorSqlite (a path relative to the file)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-mirror-config-'));
    try {
      await writeFile(path.join(dir, 'turnchart.config.json'), JSON.stringify({ mirrorSqlite: 'history/mirror.db' }));
      const file = await loadConfigFile('turnchart.config.json', path.join(dir, 'turnchart.config.json'));
      expect(serveSettings([], {}, file)['mirror-sqlite']).toBe(path.join(dir, 'history/mirror.db'));
      expect(serveSettings([], { TURNCHART_MIRROR_SQLITE: 'env.db' }, file)['mirror-sqlite']).toBe('env.db');
      expect(serveSettings(['--mirror-sqlite', 'flag.db'], { TURNCHART_MIRROR_SQLITE: 'env.db' }, file)['mirror-sqlite']).toBe('flag.db');
      expect(serveSettings([], {})['mirror-sqlite']).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
