/**
 * `cancel_p99_ms`: time from `cancelTurn` to `turn_finished` for a turn waiting on the model stream,
 * one running a tool that honours its signal, one running a tool that ignores it, one waiting for an
 * approval, and one compacting whose summary call never returns (issue 9: cancel reaches
 * compaction). Each case runs a number of times on SQLite :memory:.
 */
import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, sqliteStorage, type ModelCallOptions, type SessionHandle } from '../src/index.js';

type Case = 'model_stream' | 'tool_honours_signal' | 'tool_ignores_signal' | 'approval' | 'compaction_summary';

/** A window one large tool result fills past the compaction line, so the next model call compacts first. */
const SMALL_WINDOW = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };

function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

async function once(kind: Case): Promise<number> {
  const ready = gate();
  const release = gate();
  const honours = defineTool({
    name: 'honours',
    description: 'stops on abort',
    effect: 'read',
    input: z.object({}),
    execute: (_a, { signal }) =>
      new Promise((resolve) => {
        ready.open();
        signal.addEventListener('abort', () => resolve({ status: 'cancelled', content: 'stopped' }));
      }),
  });
  const ignores = defineTool({
    name: 'ignores',
    description: 'does not look at its signal',
    effect: 'read',
    input: z.object({}),
    execute: async () => {
      ready.open();
      await release.opened;
      return { status: 'succeeded', content: 'late' };
    },
  });
  const asks = defineTool({ name: 'asks', description: 'needs approval', effect: 'write', input: z.object({}), execute: async () => ({ status: 'succeeded', content: 'ok' }) });
  const waitingModel = (_r: unknown, { signal }: ModelCallOptions) =>
    new Promise<never>((_resolve, reject) => {
      ready.open();
      signal.addEventListener('abort', () => reject(new Error('aborted')));
    });
  const big = defineTool({ name: 'big', description: 'a large result', effect: 'read', input: z.object({}), execute: async () => ({ status: 'succeeded', content: 'x'.repeat(8_000) }) });
  const tool = kind === 'tool_honours_signal' ? 'honours' : kind === 'tool_ignores_signal' ? 'ignores' : 'asks';
  const steps =
    kind === 'model_stream'
      ? [waitingModel]
      : kind === 'compaction_summary'
        ? [{ text: 'x', toolCalls: [{ name: 'big', args: {} }] }, waitingModel]
        : [{ text: 'x', toolCalls: [{ name: tool, args: {} }] }];
  const model = scriptedModel(steps, kind === 'compaction_summary' ? { capabilities: SMALL_WINDOW } : {});
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model, tools: [honours, ignores, asks, big] });
  const session: SessionHandle = await runtime.createSession({ permissionMode: kind === 'compaction_summary' ? 'auto' : 'ask' });
  if (kind === 'approval') session.updates$.subscribe((u) => u.update.type === 'permission_requested' && ready.open());
  const finished = new Promise<number>((resolve) => session.updates$.subscribe((u) => u.update.type === 'turn_finished' && resolve(performance.now())));
  const started = await session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'go' }] });
  if (!started.ok) throw new Error('refused');
  await ready.opened;
  const t0 = performance.now();
  await session.cancelTurn(started.turnId);
  const t1 = await finished;
  release.open();
  await runtime.shutdown();
  return t1 - t0;
}

export interface CancelResult {
  perCase: Record<Case, { p50: number; p99: number }>;
  p99: number;
}

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;

export async function measureCancelLatency(runsPerCase = 50): Promise<CancelResult> {
  const cases: Case[] = ['model_stream', 'tool_honours_signal', 'tool_ignores_signal', 'approval', 'compaction_summary'];
  const all: number[] = [];
  const perCase = {} as CancelResult['perCase'];
  for (const kind of cases) {
    const samples: number[] = [];
    for (let i = 0; i < runsPerCase; i++) samples.push(await once(kind));
    perCase[kind] = { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
    all.push(...samples);
  }
  return { perCase, p99: quantile(all, 0.99) };
}
