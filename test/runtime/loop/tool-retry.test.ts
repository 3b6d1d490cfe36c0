import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, type AgentConfig, type AnyTool, type Runtime, type ScriptedStep, type SessionStorage, type ToolExecutionResult } from '../../../src/index.js';
import { runTurn, startTurn } from '../../support/harness.js';
import { routedModel } from '../../support/routed-model.js';
import { ArmedClock } from '../../support/armed-clock.js';
import { durableTargets, sqliteFile, type DurableDatabase } from '../../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../../support/host.js';

/**
 * Issue 30, item 4: `retryPolicy`. A run of a tool that timed out (or failed transiently) is run
 * again by the tool-call chart — a guard, a backoff on the runtime's clock, `executing` again — up
 * to `maxAttempts`, only for a tool that may repeat; then the failed result goes to the model, or
 * (`continueLoop: false`) the turn ends `failed` with `tool_timeout`. Each run is in the audit row.
 */

const PROMPT = 'You fetch.';
const TIMEOUT_MS = 20;

/** A tool that never answers: only its time limit (or a cancel) ends a run. Counts its runs. */
function hangingTool(options: { name?: string; effect?: 'read' | 'write' | 'execute'; idempotent?: boolean; retryPolicy?: AnyTool['retryPolicy'] } = {}) {
  const runs = { count: 0 };
  const tool = defineTool({
    name: options.name ?? 'fetch_page',
    description: 'Fetch a page',
    effect: options.effect ?? 'read',
    input: z.object({ url: z.string() }),
    timeoutMs: TIMEOUT_MS,
    ...(options.idempotent !== undefined && { idempotent: options.idempotent }),
    ...(options.retryPolicy && { retryPolicy: options.retryPolicy }),
    execute: (_args, ctx) =>
      new Promise<ToolExecutionResult>((resolve) => {
        runs.count += 1;
        ctx.signal.addEventListener('abort', () => resolve({ status: 'cancelled', content: 'aborted' }), { once: true });
      }),
  });
  return { tool, runs };
}

const callTool = (name = 'fetch_page'): ScriptedStep => ({ text: '', toolCalls: [{ name, args: { url: 'https://example.test' } }] });

let runtime: Runtime | undefined;
let db: DurableDatabase | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  await host?.close();
  await db?.drop();
  runtime = host = db = undefined;
});

async function open(target: (typeof durableTargets)[number], steps: ScriptedStep[], tools: AnyTool[], agent: AgentConfig, clock = new ArmedClock()) {
  db = target.create();
  const storage: SessionStorage = db.open();
  const { port, requests } = routedModel({ fetcher: { prompt: PROMPT, steps } });
  runtime = await createRuntime({ storage, model: port, tools, agents: { fetcher: { systemPrompt: PROMPT, ...agent } }, clock });
  const session = await runtime.createSession({ agent: 'fetcher', permissionMode: 'auto' });
  return { storage, requests, session, clock };
}

const toolResults = async (storage: SessionStorage, sessionId: string) => (await storage.listMessages(sessionId)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));

describe.each(durableTargets)('retryPolicy ($name)', (target) => {
  it.skipIf(target.skip)('runs a timed-out read again after a backoff on the runtime clock, up to maxAttempts; then the model gets the failure and the loop goes on', async () => {
    const { tool, runs } = hangingTool();
    const { storage, requests, session, clock } = await open(target, [callTool(), { text: 'gave up on it' }], [tool], {
      retryPolicy: { maxAttempts: 3, backoffMs: 1_000, on: ['timeout'] },
    });
    const firstBackoff = clock.armed(1_000);
    const turnId = await startTurn(session, 'fetch it');
    await firstBackoff;
    expect(runs.count).toBe(1);
    // No sleep moves it: the next run waits for the runtime's clock.
    await new Promise((resolve) => setTimeout(resolve, 3 * TIMEOUT_MS));
    expect(runs.count).toBe(1);
    const secondBackoff = clock.armed(2_000);
    clock.increment(1_000);
    await secondBackoff;
    expect(runs.count).toBe(2);
    clock.increment(2_000);
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'completed', finalText: 'gave up on it' });
    expect(runs.count).toBe(3);

    const [result] = await toolResults(storage, session.id);
    expect(result).toMatchObject({ status: 'failed', content: `the tool timed out after ${TIMEOUT_MS} ms and was cancelled (run 3 of at most 3)` });
    expect(requests.fetcher).toHaveLength(2);
    const [audit] = await storage.listAudit(session.id, { limit: 10 });
    expect(audit).toMatchObject({ toolName: 'fetch_page', status: 'failed', errorCode: null });
    expect(audit!.attempts).toEqual([1, 2, 3].map((attempt) => ({ attempt, status: 'failed', failure: 'timeout', durationMs: expect.any(Number) })));
    expect(audit!.executionMs).toBeGreaterThanOrEqual(3 * TIMEOUT_MS - 3);
  });

  it.skipIf(target.skip)("a tool's own policy (transient failures of an idempotent write) wins over its agent's; a second run that succeeds is the result", async () => {
    let runs = 0;
    const tool = defineTool({
      name: 'put_record',
      description: 'Store a record',
      effect: 'write',
      idempotent: true,
      input: z.object({ url: z.string() }),
      retryPolicy: { maxAttempts: 2, backoffMs: 5, on: ['transient'] },
      execute: async () => {
        runs += 1;
        if (runs === 1) throw Object.assign(new Error('connection reset'), { transient: true });
        return { status: 'succeeded', content: 'stored' };
      },
    });
    const { storage, session, clock } = await open(target, [callTool('put_record'), { text: 'stored it' }], [tool], {
      // The agent's default would not retry transient failures: the tool's own policy decides.
      retryPolicy: { maxAttempts: 5, backoffMs: 1_000, on: ['timeout'] },
    });
    const backoff = clock.armed(5);
    const turnId = await startTurn(session, 'store it');
    await backoff;
    clock.increment(5);
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'completed', finalText: 'stored it' });
    expect(await toolResults(storage, session.id)).toEqual([expect.objectContaining({ status: 'succeeded', content: 'stored (run 2 of at most 2)' })]);
    const [audit] = await storage.listAudit(session.id, { limit: 10 });
    expect(audit!.attempts).toEqual([
      { attempt: 1, status: 'failed', failure: 'transient', durationMs: expect.any(Number) },
      { attempt: 2, status: 'succeeded', failure: null, durationMs: expect.any(Number) },
    ]);
  });

  it.skipIf(target.skip)('with continueLoop: false the last timeout ends the turn failed with tool_timeout', async () => {
    const { tool, runs } = hangingTool();
    const { storage, requests, session, clock } = await open(target, [callTool(), { text: 'never asked' }], [tool], {
      retryPolicy: { maxAttempts: 2, backoffMs: 100, on: ['timeout'], continueLoop: false },
    });
    const backoff = clock.armed(100);
    const turnId = await startTurn(session, 'fetch it');
    await backoff;
    clock.increment(100);
    const outcome = await session.waitForTurn(turnId);
    expect(outcome).toMatchObject({ status: 'failed', code: 'tool_timeout' });
    expect(runs.count).toBe(2);
    expect(requests.fetcher).toHaveLength(1);
    expect((await storage.getTurn(turnId))?.status).toBe('failed');
    const [audit] = await storage.listAudit(session.id, { limit: 10 });
    expect(audit).toMatchObject({ status: 'failed', errorCode: 'tool_timeout' });
    expect(audit!.attempts).toHaveLength(2);
  });
});

describe('retryPolicy: what is not run again', () => {
  it('a tool that may not repeat (a command, not declared idempotent) runs once; continueLoop: false still ends the turn', async () => {
    const { tool, runs } = hangingTool({ name: 'deploy', effect: 'execute' });
    const { storage, session } = await open(durableTargets[0]!, [callTool('deploy')], [tool], {
      retryPolicy: { maxAttempts: 3, backoffMs: 10, on: ['timeout'], continueLoop: false },
    });
    const { outcome } = await runTurn(session, 'deploy');
    expect(outcome).toMatchObject({ status: 'failed', code: 'tool_timeout' });
    expect(runs.count).toBe(1);
    const [audit] = await storage.listAudit(session.id, { limit: 10 });
    expect(audit!.attempts).toBeUndefined();
  });

  it('a failure the policy does not name, and a tool without a policy, are written as they are', async () => {
    const { tool, runs } = hangingTool();
    const { storage, session } = await open(durableTargets[0]!, [callTool(), { text: 'ok' }], [tool], {
      retryPolicy: { maxAttempts: 3, backoffMs: 10, on: ['transient'] },
    });
    expect((await runTurn(session, 'fetch')).outcome).toMatchObject({ status: 'completed' });
    expect(runs.count).toBe(1);
    expect(await toolResults(storage, session.id)).toEqual([expect.objectContaining({ content: `the tool timed out after ${TIMEOUT_MS} ms and was cancelled` })]);
  });

  it('a cancel during the backoff ends the call cancelled, and no run follows', async () => {
    const { tool, runs } = hangingTool();
    const { session, clock } = await open(durableTargets[0]!, [callTool()], [tool], { retryPolicy: { maxAttempts: 3, backoffMs: 1_000, on: ['timeout'] } });
    const backoff = clock.armed(1_000);
    const turnId = await startTurn(session, 'fetch');
    await backoff;
    expect(await session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'cancelled' });
    clock.increment(10_000);
    expect(runs.count).toBe(1);
  });

  it('checks policies with zod: an agent’s when the runtime is made, a tool’s when it is registered', async () => {
    const { port } = routedModel({ fetcher: { prompt: PROMPT, steps: [] } });
    const storage = sqliteFile();
    db = storage;
    await expect(
      createRuntime({ storage: storage.open(), model: port, agents: { fetcher: { retryPolicy: { maxAttempts: 0, backoffMs: 10, on: ['timeout'] } } } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(
      createRuntime({ storage: storage.open(), model: port, agents: { fetcher: { retryPolicy: { maxAttempts: 2, backoffMs: 10, on: ['sometimes'] } } as never } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions' });
    const { tool } = hangingTool({ retryPolicy: { maxAttempts: 2, backoffMs: -1, on: ['timeout'] } });
    await expect(createRuntime({ storage: storage.open(), model: port, tools: [tool] })).rejects.toMatchObject({ code: 'InvalidTool' });
  });
});

describe('retryPolicy over HTTP', () => {
  it('a turn posted over HTTP retries on the real clock, ends tool_timeout, and the audit API lists each run', async () => {
    db = sqliteFile();
    const { tool, runs } = hangingTool();
    const { port } = routedModel({ fetcher: { prompt: PROMPT, steps: [callTool()] } });
    host = await testHost(db, port, {
      runtime: { tools: [tool], agents: { fetcher: { systemPrompt: PROMPT, retryPolicy: { maxAttempts: 2, backoffMs: 1, on: ['timeout'], continueLoop: false } } } },
    });
    const id = await newSession(host, { agent: 'fetcher' });
    const turn = await postTurn(host, id, 'h1');
    expect(turn.status).toBe(202);
    expect(await finished(host, id, turn.body.turnId as string)).toMatchObject({ status: 'failed', outcome: { code: 'tool_timeout' } });
    expect(runs.count).toBe(2);
    const audit = await host.call('GET', `/sessions/${id}/audit`);
    expect(audit.status).toBe(200);
    expect(audit.body).toMatchObject({
      entries: [{ toolName: 'fetch_page', errorCode: 'tool_timeout', attempts: [{ attempt: 1, failure: 'timeout' }, { attempt: 2, failure: 'timeout' }] }],
    });
  });
});
