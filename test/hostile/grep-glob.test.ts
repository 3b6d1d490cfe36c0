import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFile, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';

/**
 * Finding 2 of the security probe (issue 22): a read-only `grep` whose `include` glob was
 * `*a*a*a*a*a*a*b` became the backtracking `^.*a.*a…b$`, tested on the host's thread against a
 * long file name: `/healthz` went unanswered for about 230 s. The same call runs here through the
 * service; before the fix this test timed out, the host's thread held by one file name.
 */

let host: TestHost | undefined;
let db: DurableDatabase | undefined;
afterEach(async () => {
  await host?.close();
  await db?.drop();
  [host, db] = [undefined, undefined];
});

describe('a catastrophic include glob (probe finding 2)', () => {
  it('grep answers, and the host answers /healthz meanwhile', async () => {
    db = sqliteFile();
    const include = '*a*a*a*a*a*a*b';
    host = await testHost(db, [{ text: 'searching', toolCalls: [{ name: 'grep', args: { pattern: 'x', include } }] }, { text: 'done' }]);
    await writeFile(path.join(host.workspace, 'a'.repeat(250)), 'x\n');
    await writeFile(path.join(host.workspace, `${'a'.repeat(240)}b`), 'x\n');
    const sessionId = await newSession(host);
    const turn = await postTurn(host, sessionId, 'grep-1');
    expect(turn.status).toBe(202);
    expect((await host.call('GET', '/healthz')).status).toBe(200);
    expect(await finished(host, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    const messages = await host.call('GET', `/sessions/${sessionId}/messages`);
    const result = (messages.body.messages as { message: { role: string; content?: unknown } }[]).find((m) => m.message.role === 'tool');
    expect(JSON.stringify(result)).toContain(`${'a'.repeat(240)}b:1: x`);
  });
});
