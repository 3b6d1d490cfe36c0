import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, defineTool, scriptedModel, type Runtime } from '../../src/index.js';
import { TurnchartMetrics } from '../../src/telemetry/metrics.js';
import { SpanMetrics } from '../../src/telemetry/metrics-spans.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { startTurn } from '../support/harness.js';
import { until } from '../support/poll.js';
import { parsePrometheusText, samplesOf, valueOf } from '../support/prometheus-text.js';

const deploy = defineTool({
  name: 'deploy',
  description: 'deploys',
  effect: 'write',
  input: z.object({}),
  execute: () => ({ status: 'succeeded', content: 'deployed' }),
});

/** The span observer on a runtime of its own (issue 27): the turn counted once, whatever became of its spans. */
describe.each(durableTargets)('metrics from the spans of a runtime on $name (issue 27)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.shutdown();
    await db?.drop();
    db = undefined;
  });

  it.skipIf(skip)('a turn parked while it waits for an approval and resumed in the same process counts once', async () => {
    db = create();
    const runtime = await createRuntime({
      storage: db.open(),
      resumeTurns: true,
      idleTtlMs: 1,
      model: scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }, { text: 'done' }]),
      tools: [deploy],
    });
    runtimes.push(runtime);
    const metrics = new TurnchartMetrics();
    runtime.observeSpans(new SpanMetrics(metrics));
    const session = await runtime.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    // The idle reaper parks the session on its own time: the runtime's state is what tells.
    await until('the session to be parked', () => !runtime.isOpen(session.id));

    const reopened = await runtime.openSession(session.id);
    expect(await reopened.resolvePermission({ turnId, toolCallId: 'dep-1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });

    const m = parsePrometheusText(await metrics.text());
    expect(samplesOf(m, 'turnchart_turns_total').map((s) => [s.labels.agent, s.labels.status, s.value])).toEqual([['default', 'completed', 1]]);
    expect(valueOf(m, 'turnchart_turn_duration_seconds_count')).toBe(1);
    expect(samplesOf(m, 'turnchart_tool_calls_total').map((s) => [s.labels.tool, s.labels.status, s.value])).toEqual([['deploy', 'succeeded', 1]]);
    expect(valueOf(m, 'turnchart_model_call_duration_seconds_count', { status: 'succeeded' })).toBe(2);
  });
});
