import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import type { RecordedCall, RecordedResult, RecordedStep, TurnRecordsView } from '../../src/host/turn-records.js';
import { UiMessageTranslator } from '../../src/host/ui-message-stream.js';
import type { SessionUpdate, UpdateEnvelope } from '../../src/protocol/updates.js';

/** No stored steps: the turn's text comes from its updates only. */
const NOTHING_STORED: TurnRecordsView = {
  steps: (): RecordedStep[] => [],
  call: (): RecordedCall | undefined => undefined,
  result: (): RecordedResult | undefined => undefined,
};

let sequence = 0;
const env = (update: SessionUpdate): UpdateEnvelope => ({ version: 7, sessionId: 's', turnId: 't1', sequence: ++sequence, occurredAtMs: 0, update });

describe('turn_resumed in the UI message stream (issue 26)', () => {
  it('ends the step the old host was streaming, tells the client in a transient data part, and the continuation streams a step of its own', async () => {
    const t = new UiMessageTranslator('t1', NOTHING_STORED);
    const chunks: UIMessageChunk[] = [
      ...t.start('t1'),
      ...[
        { type: 'phase_changed', phase: 'running_model' },
        { type: 'text_delta', text: 'Half an ans' },
        { type: 'turn_resumed', clientRequestId: 'u1', fromSequence: 10_002, reason: 'owner_lost' },
        { type: 'phase_changed', phase: 'running_model' },
        { type: 'text_delta', text: 'The whole answer.' },
        { type: 'draft_cleared' },
        { type: 'turn_finished', outcome: { status: 'completed', finalText: 'The whole answer.' } },
      ].flatMap((update) => t.next(env(update as SessionUpdate))),
    ];
    expect(chunks.slice(4, 8)).toEqual([
      { type: 'text-end', id: 'text_1' },
      { type: 'finish-step' },
      { type: 'data-turn-resumed', data: { fromSequence: 10_002, reason: 'owner_lost' }, transient: true },
      { type: 'start-step' },
    ]);
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });

    // What the AI SDK's client makes of it: one message, the transient data part kept out of it.
    let message: UIMessage | undefined;
    const stream = new ReadableStream<UIMessageChunk>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const errors: unknown[] = [];
    for await (const snapshot of readUIMessageStream({ stream, onError: (error) => errors.push(error) })) message = snapshot;
    expect(errors).toEqual([]);
    expect(message!.parts.map((part) => part.type)).toEqual(['step-start', 'text', 'step-start', 'text']);
    expect(message!.parts.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text)).toEqual(['Half an ans', 'The whole answer.']);
  });
});
