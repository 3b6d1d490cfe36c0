/**
 * `delta_throughput_per_s`: text deltas from a model stream to a subscriber of `session.updates$`.
 * The model yields `deltas` text deltas and then completes; the clock runs from `startTurn` until
 * the turn's outcome is known (so it includes the one assistant-message write of the turn).
 */
import { createRuntime, sqliteStorage, type ModelPort, type ModelStreamEvent } from '../src/index.js';

export interface ThroughputResult {
  deltas: number;
  received: number;
  elapsedMs: number;
  perSecond: number;
  /** The same model stream drained by a bare for-await loop, for scale. */
  rawPerSecond: number;
}

const DELTA = 'tok ';

export function floodModel(deltas: number): ModelPort {
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      for (let i = 0; i < deltas; i++) yield { type: 'text_delta', text: DELTA };
      yield { type: 'response_completed', response: { text: DELTA.repeat(deltas), reasoning: '', toolCalls: [] } };
    },
  };
}

export async function measureDeltaThroughput(deltas: number): Promise<ThroughputResult> {
  const model = floodModel(deltas);
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model });
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
  let received = 0;
  session.updates$.subscribe((envelope) => {
    if (envelope.update.type === 'text_delta') received += 1;
  });

  const started = performance.now();
  const turn = await session.startTurn({ clientRequestId: 'flood', input: [{ type: 'text', text: 'talk a lot' }] });
  if (!turn.ok) throw new Error(`startTurn refused: ${JSON.stringify(turn.error)}`);
  const outcome = await session.waitForTurn(turn.turnId);
  const elapsedMs = performance.now() - started;
  if (outcome.status !== 'completed') throw new Error(`flood turn did not complete: ${JSON.stringify(outcome)}`);
  await runtime.shutdown();

  const rawStarted = performance.now();
  let raw = 0;
  for await (const event of model.stream(
    { system: [], messages: [], tools: [], maxOutputTokens: 1 },
    { signal: new AbortController().signal },
  )) {
    if (event.type === 'text_delta') raw += 1;
  }
  const rawPerSecond = raw / ((performance.now() - rawStarted) / 1000);

  return { deltas, received, elapsedMs, perSecond: received / (elapsedMs / 1000), rawPerSecond };
}
