import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { testHost, type TestHost } from '../support/host.js';
import { fold, texts, UiChatClient, userMessage } from '../support/ui-chat-client.js';

const sqlite = durableTargets[0]!;

/** The text a UI message stream's deltas spell. */
function streamedText(body: string): string {
  return [...body.matchAll(/^data: (\{.*\})$/gm)]
    .map((match) => JSON.parse(match[1]!) as { type: string; delta?: string })
    .filter((chunk) => chunk.type === 'text-delta')
    .map((chunk) => chunk.delta)
    .join('');
}

describe('agents over HTTP', () => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  /** A host whose default model and reviewer model are two scripts: which one answers tells which agent ran. */
  async function start(defaultReplies: string[], reviewerReplies: string[]): Promise<TestHost> {
    db = sqlite.create();
    return testHost(
      db,
      defaultReplies.map((text) => ({ text })),
      {
        modelDescription: 'the default script',
        agentNotes: { reviewer: { description: 'Reviews; never writes.', modelDescription: 'the reviewer script' } },
        runtime: {
          agents: {
            reviewer: {
              systemPrompt: 'You review.',
              model: scriptedModel(reviewerReplies.map((text) => ({ text }))),
              tools: ['read_file', 'list_dir', 'grep'],
              permissions: { write_file: 'deny' },
            },
          },
        },
      },
    );
  }

  it('GET /agents lists each agent with its description, model and the tools its model sees; /openapi.json has the route', async () => {
    host = await start([], []);
    const { status, body } = await host.call('GET', '/agents');
    expect(status).toBe(200);
    const agents = body.agents as { name: string; description: string | null; model: string; tools: string[] }[];
    expect(agents.map((agent) => agent.name).sort()).toEqual(['default', 'explorer', 'reviewer']);
    const reviewer = agents.find((agent) => agent.name === 'reviewer')!;
    expect(reviewer).toMatchObject({ description: 'Reviews; never writes.', model: 'the reviewer script' });
    expect(reviewer.tools).toEqual(expect.arrayContaining(['read_file', 'list_dir', 'grep']));
    expect(reviewer.tools).not.toContain('write_file');
    expect(reviewer.tools).not.toContain('run_command');
    const fallback = agents.find((agent) => agent.name === 'default')!;
    expect(fallback.model).toBe('the default script');
    expect(fallback.tools).toEqual(expect.arrayContaining(['read_file', 'write_file', 'run_command']));

    const doc = (await host.call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } };
    expect(doc.paths['/agents']?.get).toBeDefined();
    expect(doc.components.schemas.AgentList).toBeDefined();
  });

  it('POST /sessions with an unknown agent is 400 UnknownAgent with the names; a known one runs its turns on its own model', async () => {
    host = await start(['from the default model'], ['from the reviewer model']);
    const unknown = await host.call('POST', '/sessions', { agent: 'nope' });
    expect(unknown.status).toBe(400);
    const error = unknown.body.error as { code: string; message: string; agents: string[] };
    expect(error.code).toBe('UnknownAgent');
    expect(error.message).toBe("no agent named 'nope'; agents are: default, explorer, reviewer");
    expect(error.agents).toEqual(['default', 'explorer', 'reviewer']);

    const created = await host.call('POST', '/sessions', { agent: 'reviewer' });
    expect(created.status).toBe(201);
    const sessionId = created.body.sessionId as string;
    const turn = await host.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'review it' }] });
    expect(turn.status).toBe(202);
    const done = await host.call('GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}?wait=10`);
    expect(done.body.outcome).toEqual({ status: 'completed', finalText: 'from the reviewer model' });
  });

  it('/api/chat picks the agent of a new chat from the body, or from ?agent=; an unknown one is 400', async () => {
    host = await start(['from the default model'], ['reviewer one', 'reviewer two']);

    const bodyResponse = await fetch(`${host.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'chat-body', agent: 'reviewer', messages: [userMessage('u1', 'hi')] }),
    });
    expect(bodyResponse.status).toBe(200);
    expect(streamedText(await bodyResponse.text())).toBe('reviewer one');
    expect((await host.storage.getSession('chat-body'))?.agent).toBe('reviewer');

    const byQuery = new UiChatClient(`${host.url}`, 'chat-query');
    const queryResponse = await fetch(`${host.url}/api/chat?agent=reviewer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: byQuery.chatId, messages: [userMessage('u2', 'hi')] }),
    });
    expect(queryResponse.status).toBe(200);
    expect(streamedText(await queryResponse.text())).toBe('reviewer two');
    expect((await host.storage.getSession('chat-query'))?.agent).toBe('reviewer');

    // Without an agent the chat's session runs the default agent, on the host's model.
    const { message } = await fold(await new UiChatClient(host.url, 'chat-default').send([userMessage('u3', 'hi')]));
    expect(texts(message)).toEqual(['from the default model']);

    const unknown = await fetch(`${host.url}/api/chat?agent=nope`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'chat-nope', messages: [userMessage('u4', 'hi')] }),
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('UnknownAgent');
    expect(await host.storage.getSession('chat-nope')).toBeUndefined();
  });
});
