import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { aiSdkModel, createRuntime, type AssistantMessage, type Runtime } from '../../src/index.js';
import { FINISH, mockStreaming } from '../support/ai-sdk-mock.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { readFileTool, runTurn } from '../support/harness.js';

/** Opaque values of the shapes providers use, including characters JSON and PostgreSQL treat specially. */
const SIGNATURE = { anthropic: { signature: 'EqQBCkgIARABGAIiQL+/==\u2028"quoted"\\', nested: { n: 1.5, list: [0, 'x', null, false] } } };
const REDACTED = { anthropic: { redactedData: 'U2VjcmV0IHRoaW5raW5n' } };
const THOUGHT = { google: { thoughtSignature: 'CiQB0e2Kb/sig' } };

const FIRST_RESPONSE: LanguageModelV3StreamPart[] = [
  { type: 'reasoning-start', id: 'r1' },
  { type: 'reasoning-delta', id: 'r1', delta: 'I should read it.' },
  { type: 'reasoning-delta', id: 'r1', delta: '', providerMetadata: SIGNATURE },
  { type: 'reasoning-end', id: 'r1' },
  { type: 'reasoning-start', id: 'r2', providerMetadata: REDACTED },
  { type: 'reasoning-end', id: 'r2' },
  { type: 'text-delta', id: 't', delta: 'Reading a.txt.' },
  { type: 'tool-call', toolCallId: 'toolu_01', toolName: 'read_file', input: '{"path":"a.txt"}', providerMetadata: THOUGHT },
  { ...FINISH, finishReason: { unified: 'tool-calls', raw: 'tool_use' } },
];

/** The assistant message of a prompt that carries the call `toolu_01`. */
function assistantWithCall(prompt: LanguageModelV3Prompt) {
  return prompt.find((m) => m.role === 'assistant' && m.content.some((part) => part.type === 'tool-call' && part.toolCallId === 'toolu_01'));
}

describe.each(durableTargets)('provider-opaque data round-trips on $name (RT-18)', ({ skip, create }) => {
  let runtime: Runtime | undefined;
  let db: DurableDatabase | undefined;
  afterEach(async () => {
    await runtime?.shutdown();
    runtime = undefined;
    await db?.drop();
    db = undefined;
  });

  it.skipIf(skip)('sends back what the provider attached, exactly, on the next call and after a restart', async () => {
    db = create();
    const mock = mockStreaming(FIRST_RESPONSE, [{ type: 'text-delta', id: 't', delta: 'It says hello.' }, FINISH], [{ type: 'text-delta', id: 't', delta: 'Yes.' }, FINISH]);
    runtime = await createRuntime({ storage: db.open(), model: aiSdkModel(mock), tools: [readFileTool()] });
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
    expect((await runTurn(session, 'read a.txt')).outcome).toMatchObject({ status: 'completed', finalText: 'It says hello.' });

    const expected = {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'I should read it.', providerOptions: SIGNATURE },
        { type: 'reasoning', text: '', providerOptions: REDACTED },
        { type: 'text', text: 'Reading a.txt.' },
        { type: 'tool-call', toolCallId: 'toolu_01', toolName: 'read_file', input: { path: 'a.txt' }, providerOptions: THOUGHT },
      ],
    };
    const sentNext = assistantWithCall(mock.doStreamCalls[1]!.prompt);
    expect(sentNext).toEqual(expected);

    // A new runtime reads the message back from storage and sends the same bytes.
    const sessionId = session.id;
    await runtime.shutdown();
    runtime = await createRuntime({ storage: db.open(), model: aiSdkModel(mock), tools: [readFileTool()] });
    const reopened = await runtime.openSession(sessionId);
    expect((await runTurn(reopened, 'is that all?')).outcome).toMatchObject({ status: 'completed', finalText: 'Yes.' });
    expect(JSON.stringify(assistantWithCall(mock.doStreamCalls[2]!.prompt))).toBe(JSON.stringify(sentNext));

    // Stored with the message, and counted in the budget: it is sent, so it costs tokens.
    const preview = await runtime.inspectContextWindow(sessionId);
    const stored = preview.conversation.find((m) => m.role === 'assistant' && m.toolCalls.length > 0) as AssistantMessage;
    expect(stored.providerData?.blocks).toHaveLength(4);
    expect(stored.toolCalls[0]!.providerMetadata).toEqual(THOUGHT);
    expect(preview.budget.conversationTokens).toBe(Math.ceil(Buffer.byteLength(JSON.stringify(preview.conversation), 'utf8') / 4));
  });
});
