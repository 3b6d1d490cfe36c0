import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterHost, clusterSkipReason } from '../support/cluster-hosts.js';
import { call } from '../support/host.js';
import type { HostProcess } from '../support/host-process.js';
import { answerApproval, fold, texts, toolParts, UiChatClient, userMessage } from '../support/ui-chat-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-cluster-chat-');

const writeNote = (file: string) => ({ text: 'writing it', toolCalls: [{ name: 'write_file', args: { path: file, content: 'the build is green\n' } }] });

describe.skipIf(clusterSkipReason !== null)('the AI SDK endpoint on a cluster of two host processes', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const host of hosts.splice(0)) {
      host.kill('SIGTERM');
      await host.exited;
    }
    await drop?.();
    drop = undefined;
  });

  async function twoHosts(replies: { a: unknown[]; b: unknown[] }) {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace };
    const [a, b] = await Promise.all([clusterHost({ ...common, name: 'a', replies: replies.a }), clusterHost({ ...common, name: 'b', replies: replies.b })]);
    hosts.push(a, b);
    return { a, b, workspace };
  }

  it('a chat started through one host goes on through the other: resumed, approved, resubmitted and continued there, the turns running on the first', async () => {
    // B has no model reply at all: every turn it streams must have run on A, the session's owner.
    const { a, b, workspace } = await twoHosts({ a: [writeNote('note.md'), { text: 'wrote note.md' }, { text: 'still here' }], b: [] });
    const viaA = new UiChatClient(a.url, 'chat-across');
    const viaB = new UiChatClient(b.url, 'chat-across');
    const user = userMessage('u1', 'note that the build is green');

    const asked = await fold(await viaA.send([user]));
    expect(asked.types.slice(-3)).toEqual(['tool-approval-request', 'finish-step', 'finish']);
    const [part] = toolParts(asked.message);
    expect(part).toMatchObject({ type: 'tool-write_file', state: 'approval-requested', input: { path: 'note.md' } });

    // The page reloads and the load balancer sends it to B: `useChat({ resume: true })` finds the turn waiting there.
    const resumedStream = await viaB.reconnect();
    expect(resumedStream).not.toBeNull();
    const resumed = await fold(resumedStream!);
    expect(resumed.errors).toEqual([]);
    expect(resumed.types.slice(-3)).toEqual(['tool-approval-request', 'finish-step', 'finish']);
    expect(resumed.message.id).toBe(asked.message.id);
    expect(texts(resumed.message)).toEqual(['writing it']);
    expect(toolParts(resumed.message)).toEqual([expect.objectContaining({ toolCallId: part!.toolCallId, state: 'approval-requested', input: part!.input })]);
    expect(existsSync(path.join(workspace, 'note.md'))).toBe(false);

    // Approved through B: the answer goes to A, and A's updates of the rest of the turn come back through B.
    const answered = answerApproval(resumed.message, true);
    const continued = await fold(await viaB.send([user, answered]), answered);
    expect(continued.errors).toEqual([]);
    expect(continued.types[0]).toBe('start');
    expect(continued.types.at(-1)).toBe('finish');
    expect(continued.message.id).toBe(asked.message.id);
    expect(toolParts(continued.message)).toEqual([
      expect.objectContaining({ toolCallId: part!.toolCallId, state: 'output-available', approval: expect.objectContaining({ approved: true }) }),
    ]);
    expect(texts(continued.message)).toEqual(['writing it', 'wrote note.md']);
    expect(existsSync(path.join(workspace, 'note.md'))).toBe(true);

    // The same message sent again through B (a retry) is the same turn, replayed whole from storage.
    const again = await fold(await viaB.send([user]));
    expect(again.errors).toEqual([]);
    expect(again.message.id).toBe(asked.message.id);
    expect(texts(again.message)).toEqual(['writing it', 'wrote note.md']);

    // A new message through B starts a turn on A; nothing runs after it ends.
    const next = await fold(await viaB.send([user, continued.message, userMessage('u2', 'are you there?')]));
    expect(next.errors).toEqual([]);
    expect(texts(next.message)).toEqual(['still here']);
    expect(await viaB.reconnect()).toBeNull();
    expect(await viaA.reconnect()).toBeNull();

    const stored = await call(b.url, 'GET', '/sessions/chat-across/messages');
    const turnIds = new Set((stored.body.messages as { turnId: string }[]).map((m) => m.turnId));
    expect([...turnIds]).toEqual([asked.message.id, next.message.id]);
  });

  it('two first requests of one chat on two hosts make one session: one turn runs, the other is refused Busy', async () => {
    // Whichever host creates the session runs its turn, which then waits for approval: the other request meets it busy.
    const { a, b } = await twoHosts({ a: [writeNote('a.md')], b: [writeNote('b.md')] });
    const outcomes = await Promise.allSettled([
      new UiChatClient(a.url, 'chat-race').send([userMessage('u1', 'one')]),
      new UiChatClient(b.url, 'chat-race').send([userMessage('u2', 'two')]),
    ]);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toContain('Busy');
    const streamed = await fold((outcomes.find((o) => o.status === 'fulfilled') as PromiseFulfilledResult<ReadableStream<never>>).value);
    expect(streamed.types).toContain('tool-approval-request');
    for (const host of [a, b]) {
      const sessions = await call(host.url, 'GET', '/sessions');
      expect((sessions.body.sessions as { sessionId: string }[]).map((s) => s.sessionId)).toEqual(['chat-race']);
    }
  });
});
