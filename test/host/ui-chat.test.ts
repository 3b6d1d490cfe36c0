import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelPort, ModelStreamEvent } from '../../src/index.js';
import { DEFAULT_CAPABILITIES } from '../../src/model/scripted-model.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, gatedStep, testHost, type TestHost } from '../support/host.js';
import { answerApproval, fold, texts, toolParts, UiChatClient, userMessage } from '../support/ui-chat-client.js';

describe.each(durableTargets)('the AI SDK UI endpoint on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('streams a turn with a tool call into one assistant message: text, tool input and output, final text', async () => {
    db = create();
    host = await testHost(db, [
      { reasoning: 'the file should say', text: 'let me look', toolCalls: [{ name: 'read_file', args: { path: 'a.txt' } }] },
      { text: 'a.txt says hello' },
    ]);
    await writeFile(path.join(host.workspace, 'a.txt'), 'hello\n');
    const client = new UiChatClient(host.url, 'chat-tool');
    const { message, types, errors } = await fold(await client.send([userMessage('u1', 'what is in a.txt?')]));

    expect(errors).toEqual([]);
    expect(client.responses[0]!.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(client.responses[0]!.headers.get('content-type')).toContain('text/event-stream');
    expect(types[0]).toBe('start');
    expect(types.at(-1)).toBe('finish');
    expect(types.filter((t) => t === 'start-step')).toHaveLength(2);
    expect(types.filter((t) => t === 'finish-step')).toHaveLength(2);

    const stored = await host.storage.listMessages('chat-tool');
    const call = stored.flatMap((m) => (m.message.role === 'tool' ? [m.message] : []))[0]!;
    const [turn] = await host.storage.listTurns('chat-tool');
    expect(message.id).toBe(turn!.id);
    expect(message.parts.map((p) => p.type)).toEqual(['step-start', 'reasoning', 'text', 'tool-read_file', 'step-start', 'text']);
    expect(message.parts[1]).toMatchObject({ type: 'reasoning', text: 'the file should say', state: 'done' });
    expect(texts(message)).toEqual(['let me look', 'a.txt says hello']);
    // The runtime's own tool-call id, so the UI part and the stored call are one.
    expect(toolParts(message)).toEqual([
      expect.objectContaining({ toolCallId: call.toolCallId, state: 'output-available', input: { path: 'a.txt' }, output: call.content }),
    ]);
    expect(call.content).toContain('hello');
    expect(turn).toMatchObject({ clientRequestId: 'u1', status: 'completed' });
  });

  it.skipIf(skip)('creates the chat\'s session on first use, under the chat id, in ask mode by default', async () => {
    db = create();
    host = await testHost(db, [{ text: 'hi' }]);
    expect((await host.call('GET', '/sessions/chat-new')).status).toBe(404);
    await fold(await new UiChatClient(host.url, 'chat-new').send([userMessage('u1', 'hello')]));
    const session = await host.call('GET', '/sessions/chat-new');
    expect(session).toMatchObject({ status: 200, body: { sessionId: 'chat-new', permissionMode: 'ask' } });
  });

  it.skipIf(skip)('asks for approval, finishes the response while the turn waits, and continues the same message once approved', async () => {
    db = create();
    host = await testHost(db, [{ text: 'writing it', toolCalls: [{ name: 'write_file', args: { path: 'note.md', content: 'green\n' } }] }, { text: 'wrote note.md' }]);
    const client = new UiChatClient(host.url, 'chat-approve');
    const user = userMessage('u1', 'note that the build is green');
    const asked = await fold(await client.send([user]));

    expect(asked.types.slice(-3)).toEqual(['tool-approval-request', 'finish-step', 'finish']);
    const [part] = toolParts(asked.message);
    expect(part).toMatchObject({ type: 'tool-write_file', state: 'approval-requested', input: { path: 'note.md', content: 'green\n' } });
    const snapshot = await host.call('GET', '/sessions/chat-approve');
    expect(snapshot.body.runtime).toMatchObject({ phase: 'waiting_permission', pendingApproval: { toolCallId: part!.toolCallId } });
    expect(existsSync(path.join(host.workspace, 'note.md'))).toBe(false);

    const answered = answerApproval(asked.message, true);
    const continued = await fold(await client.send([user, answered]), answered);
    expect(continued.errors).toEqual([]);
    expect(continued.types[0]).toBe('start');
    expect(continued.types.at(-1)).toBe('finish');
    expect(continued.message.id).toBe(asked.message.id);
    expect(toolParts(continued.message)).toEqual([expect.objectContaining({ toolCallId: part!.toolCallId, state: 'output-available', approval: expect.objectContaining({ approved: true }) })]);
    expect(texts(continued.message)).toEqual(['writing it', 'wrote note.md']);
    expect(existsSync(path.join(host.workspace, 'note.md'))).toBe(true);
    expect(await finished(host, 'chat-approve', asked.message.id)).toMatchObject({ status: 'completed' });
  });

  it.skipIf(skip)('a denied approval ends the tool part denied, without an error, and the tool never runs', async () => {
    db = create();
    host = await testHost(db, [{ text: 'writing it', toolCalls: [{ name: 'write_file', args: { path: 'note.md', content: 'x' } }] }]);
    const client = new UiChatClient(host.url, 'chat-deny');
    const user = userMessage('u1', 'write a note');
    const asked = await fold(await client.send([user]));
    const answered = answerApproval(asked.message, false, 'not now');
    // Only the last message, as a front end sending just that one (`prepareSendMessagesRequest`) does.
    const continued = await fold(await client.send([answered]), answered);

    expect(continued.errors).toEqual([]);
    expect(continued.types).toContain('tool-output-denied');
    expect(continued.types.at(-1)).toBe('finish');
    expect(toolParts(continued.message)).toEqual([expect.objectContaining({ state: 'output-denied', approval: expect.objectContaining({ approved: false, reason: 'not now' }) })]);
    expect(existsSync(path.join(host.workspace, 'note.md'))).toBe(false);
    expect(await finished(host, 'chat-deny', asked.message.id)).toMatchObject({ status: 'failed', outcome: { code: 'permission_denied' } });
  });

  it.skipIf(skip)('a turn cancelled through the cancel route while it streams ends its response with abort', async () => {
    db = create();
    const gate = gatedStep({ text: 'never said' });
    host = await testHost(db, [{ text: 'first step', toolCalls: [{ name: 'list_dir', args: { path: '.' } }] }, gate.step]);
    const client = new UiChatClient(host.url, 'chat-cancel');
    const folding = fold(await client.send([userMessage('u1', 'look around')]));
    await gate.reached;
    const [turn] = await host.storage.listTurns('chat-cancel');
    expect((await host.call('POST', `/sessions/chat-cancel/turns/${turn!.id}/cancel`)).status).toBe(200);
    const { message, types, errors } = await folding;

    expect(errors).toEqual([]);
    expect(types.at(-1)).toBe('abort');
    expect(texts(message)).toEqual(['first step']);
    expect(toolParts(message)).toEqual([expect.objectContaining({ state: 'output-available' })]);
    expect(await finished(host, 'chat-cancel', turn!.id)).toMatchObject({ status: 'cancelled' });
  });

  it.skipIf(skip)('resumes the running turn from its start: stored steps, the draft so far, then live to the end', async () => {
    db = create();
    const model = draftingModel([{ text: 'step one', toolCalls: [{ name: 'list_dir', args: { path: '.' } }] }], ['half ', 'done']);
    host = await testHost(db, model);
    const client = new UiChatClient(host.url, 'chat-resume');
    const first = await client.send([userMessage('u1', 'go')]);
    await model.drafted;
    // The page reloads: the first response is dropped, and `useChat({ resume: true })` reconnects.
    await first.cancel();
    const resumed = await client.reconnect();
    expect(resumed).not.toBeNull();
    const folding = fold(resumed!);
    model.release();
    const { message, types, errors } = await folding;

    expect(errors).toEqual([]);
    const [turn] = await host.storage.listTurns('chat-resume');
    expect(message.id).toBe(turn!.id);
    expect(types[0]).toBe('start');
    expect(types.at(-1)).toBe('finish');
    expect(texts(message)).toEqual(['step one', 'half done']);
    expect(toolParts(message)).toEqual([expect.objectContaining({ type: 'tool-list_dir', state: 'output-available', input: { path: '.' } })]);
  });

  it.skipIf(skip)('disconnects a client that stops reading rather than hold the turn for it, and the turn goes on', async () => {
    db = create();
    const big = 'x'.repeat(64 * 1024);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const model: ModelPort = {
      capabilities: DEFAULT_CAPABILITIES,
      async *stream() {
        await gate;
        for (let i = 0; i < 400; i++) yield { type: 'text_delta', text: big };
        yield { type: 'response_completed', response: { text: 'done', reasoning: '', toolCalls: [] } };
      },
    };
    host = await testHost(db, model, { sse: { bufferBytes: 1024 * 1024 } });
    const client = new UiChatClient(host.url, 'chat-slow');
    const first = await client.send([userMessage('u1', 'talk a lot')]);
    await first.cancel();
    const [turn] = await host.storage.listTurns('chat-slow');
    const stalled = await stalledClient(host.url, '/api/chat/chat-slow/stream');
    release();
    expect(await finished(host, 'chat-slow', turn!.id)).toMatchObject({ status: 'completed' });
    // Kept alive, a finished response would leave the connection open: only the host's cut-off closes it.
    stalled.resume();
    await stalled.closed;
    expect(stalled.received()).toBeLessThan(400 * big.length);
  });

  it.skipIf(skip)('answers 204 on resume when no turn of the chat is running (none yet, or its turn ended)', async () => {
    db = create();
    host = await testHost(db, [{ text: 'over' }]);
    const client = new UiChatClient(host.url, 'chat-idle');
    expect(await client.reconnect()).toBeNull();
    await fold(await client.send([userMessage('u1', 'hello')]));
    expect(await client.reconnect()).toBeNull();
    expect(client.responses.filter((r) => r.status === 204)).toHaveLength(2);
  });

  it.skipIf(skip)('a model failure becomes an error part, then finish', async () => {
    db = create();
    host = await testHost(db, [{ error: 'provider', message: 'the provider fell over' }]);
    const { types, errors } = await fold(await new UiChatClient(host.url, 'chat-fail').send([userMessage('u1', 'hello')]));
    expect(types.slice(-2)).toEqual(['error', 'finish']);
    expect(errors).toEqual([expect.stringContaining('model_error')]);
    expect(errors[0]).toContain('the provider fell over');
  });

  it.skipIf(skip)('a resubmitted message is the same turn: replayed, never run twice', async () => {
    db = create();
    const gate = gatedStep({ text: 'only once' });
    host = await testHost(db, [gate.step, { text: 'a second answer would be a bug' }]);
    const client = new UiChatClient(host.url, 'chat-again');
    const messages = [userMessage('u1', 'hello')];
    const first = fold(await client.send(messages));
    await gate.reached;
    // Sent again while it runs (a retry after a dropped connection), and again once it ended.
    const whileRunning = fold(await client.send(messages));
    gate.release();
    const [a, b] = await Promise.all([first, whileRunning]);
    const after = await fold(await client.send(messages));

    for (const folded of [a, b, after]) {
      expect(folded.errors).toEqual([]);
      expect(texts(folded.message)).toEqual(['only once']);
      expect(folded.message.id).toBe(a.message.id);
    }
    expect(await host.storage.listTurns('chat-again')).toHaveLength(1);
  });

  it.skipIf(skip)('takes the host\'s bearer token like every other route', async () => {
    db = create();
    host = await testHost(db, [{ text: 'let in' }], { token: 's3cret' });
    await expect(new UiChatClient(host.url, 'chat-auth').send([userMessage('u1', 'hi')])).rejects.toThrow(/Unauthorized/);
    await expect(new UiChatClient(host.url, 'chat-auth').reconnect()).rejects.toThrow(/Unauthorized/);
    const client = new UiChatClient(host.url, 'chat-auth', 's3cret');
    expect(texts((await fold(await client.send([userMessage('u1', 'hi')]))).message)).toEqual(['let in']);
    expect(await client.reconnect()).toBeNull();
  });

  it.skipIf(skip)('refuses a bad request as JSON before any stream: 400 InvalidInput, regenerate, a foreign approval id', async () => {
    db = create();
    host = await testHost(db, [{ text: 'unused' }]);
    const noMessages = await host.call('POST', '/api/chat', { id: 'chat-bad', messages: [], trigger: 'submit-message' });
    expect(noMessages).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput' } } });
    const noId = await host.call('POST', '/api/chat', { messages: [userMessage('u1', 'hi')] });
    expect(noId).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput' } } });
    const regenerate = await host.call('POST', '/api/chat', { id: 'chat-bad', messages: [userMessage('u1', 'hi')], trigger: 'regenerate-message', messageId: 'm1' });
    expect(regenerate).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput', message: expect.stringContaining('regenerat') } } });
    const forged = {
      id: 'm1',
      role: 'assistant',
      parts: [{ type: 'tool-write_file', toolCallId: 'call_1', state: 'approval-responded', input: {}, approval: { id: 'made-up', approved: true } }],
    };
    // An approval answered for a chat that has no session creates none.
    const unknown = await host.call('POST', '/api/chat', { id: 'chat-bad', messages: [userMessage('u1', 'hi'), forged] });
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'UnknownSession' } } });
    expect((await host.call('GET', '/sessions/chat-bad')).status).toBe(404);
    await fold(await new UiChatClient(host.url, 'chat-bad').send([userMessage('u1', 'hi')]));
    const foreign = await host.call('POST', '/api/chat', { id: 'chat-bad', messages: [userMessage('u1', 'hi'), forged], trigger: 'submit-message', extra: 'tolerated' });
    expect(foreign).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput', message: expect.stringContaining('made-up') } } });
    expect((await host.call('GET', '/openapi.json')).body).toMatchObject({ paths: { '/api/chat': { post: expect.anything() }, '/api/chat/{id}/stream': { get: expect.anything() } } });
  });
});

/**
 * A model whose call after `steps` streams the first draft delta, then waits until released before
 * the rest: a resumed stream then finds a stored step and a draft under way.
 */
function draftingModel(steps: { text: string; toolCalls?: { name: string; args: unknown }[] }[], deltas: [string, string]) {
  let release: () => void = () => undefined;
  let drafted: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const draftedPromise = new Promise<void>((resolve) => (drafted = resolve));
  let call = 0;
  const model: ModelPort & { drafted: Promise<void>; release: () => void } = {
    capabilities: DEFAULT_CAPABILITIES,
    drafted: draftedPromise,
    release: () => release(),
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      const step = steps[call++];
      if (step) {
        yield { type: 'text_delta', text: step.text };
        const toolCalls = (step.toolCalls ?? []).map((c, i) => ({ id: `c${call}_${i}`, name: c.name, argumentsText: JSON.stringify(c.args) }));
        yield { type: 'response_completed', response: { text: step.text, reasoning: '', toolCalls } };
        return;
      }
      yield { type: 'text_delta', text: deltas[0] };
      drafted();
      await gate;
      yield { type: 'text_delta', text: deltas[1] };
      yield { type: 'response_completed', response: { text: deltas.join(''), reasoning: '', toolCalls: [] } };
    },
  };
  return model;
}

/** An HTTP client that sends a GET and then never reads: its socket's receive window fills up. */
async function stalledClient(base: string, route: string): Promise<{ closed: Promise<void>; received: () => number; resume: () => void }> {
  const url = new URL(base);
  const socket = net.connect({ host: url.hostname, port: Number(url.port) });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  let received = 0;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length;
    socket.pause();
  });
  socket.write(`GET ${route} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
  return { closed, received: () => received, resume: () => socket.resume() };
}
