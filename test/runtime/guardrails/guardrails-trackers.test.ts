import { afterEach, describe, expect, it } from 'vitest';
import { signatureHash } from '../../../machines/guardrails.js';
import { createRuntime, scriptedModel, type Runtime, type ScriptedStep, type SessionHandle, type UpdateEnvelope } from '../../../src/index.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { crash, failingTool, harness, readFileTool, runTurn, type Harness } from '../../support/harness.js';

/**
 * GR-2a through the public API: the loop detector and the mistake counter belong to the session
 * (seed 003) — a turn starts from what the session's last turn left, hands its trackers back, and
 * the session stores them with the turn, so a restart keeps them. Only the seed's own rules reset
 * them: a different call ends a run of identical ones, a step with a success clears the mistakes.
 * The loop tracker carries across turns under seed 003's profile; seed 000's default counts a turn.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const tools = [readFileTool(), failingTool()];
// Unknown tools fail without counting toward a loop, so a run of failing steps is only mistakes.
const miss = (i: number) => ({ text: `miss ${i}`, toolCalls: [{ name: `no_such_tool_${i}`, args: {} }] });
const read = (path: string) => ({ text: `reading ${path}`, toolCalls: [{ name: 'read_file', args: { path } }] });
const done = (text = 'done') => ({ text });

/** `n` failing steps numbered from `from`, then the answer. */
const misses = (from: number, n: number, answer = 'done'): ScriptedStep[] => [...Array.from({ length: n }, (_, i) => miss(from + i)), done(answer)];

const triggered = (updates: UpdateEnvelope[]) => updates.flatMap((u) => (u.update.type === 'guardrail_triggered' ? [u.update] : []));

describe('the guardrail trackers across a session’s turns (GR-2a)', () => {
  it('counts mistakes across turns: the second turn trips the breaker at six only with the first turn’s three', async () => {
    h = await harness([...misses(1, 3, 'first'), ...misses(4, 3, 'never')], { tools });
    expect((await runTurn(h.session, 'one')).outcome).toEqual({ status: 'completed', finalText: 'first' });
    const { turnId, outcome } = await runTurn(h.session, 'two');
    // Three failing steps in this turn, six in a row in the session: the default limit (GR-2).
    expect(outcome).toMatchObject({ status: 'completed', stoppedBy: 'mistake_limit', finalText: expect.stringContaining('6 steps in a row') });
    expect(triggered(h.updates)).toEqual([{ type: 'guardrail_triggered', rule: 'mistake_limit', level: 'hard', count: 6 }]);
    // The model was not asked a seventh time; the trackers are stored with each turn.
    expect(h.model.requests).toHaveLength(7);
    expect((await h.storage.getTurn(turnId))?.trackers).toMatchObject({ mistakes: 6 });
  });

  it('a step with a success resets the count, in the turn after too', async () => {
    // 3 mistakes; then a success, 5 mistakes (5 < 6); then one more trips it.
    h = await harness([...misses(1, 3), read('a'), ...misses(4, 5), miss(9), done('never')], { tools });
    expect((await runTurn(h.session, 'one')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect((await runTurn(h.session, 'two')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(triggered(h.updates)).toEqual([]);
    expect((await runTurn(h.session, 'three')).outcome).toMatchObject({ status: 'completed', stoppedBy: 'mistake_limit' });
    expect(triggered(h.updates)).toEqual([{ type: 'guardrail_triggered', rule: 'mistake_limit', level: 'hard', count: 6 }]);
  });

  it('a stop leaves the count where it was: the next turn’s model call still happens, its first mistake trips it again', async () => {
    // The breaker stops turn one after its sixth step, so the script's next step is turn two's answer.
    h = await harness([...misses(1, 6).slice(0, 6), done('answered'), miss(7)], { tools });
    expect((await runTurn(h.session, 'one')).outcome).toMatchObject({ stoppedBy: 'mistake_limit' });
    // A carried count is no mistake of this turn: its model call is made, and an answer completes it.
    expect((await runTurn(h.session, 'two')).outcome).toEqual({ status: 'completed', finalText: 'answered' });
    expect((await runTurn(h.session, 'three')).outcome).toMatchObject({ stoppedBy: 'mistake_limit', finalText: expect.stringContaining('7 steps in a row') });
  });

  it('under seed 003’s profile, counts identical calls across turns: the fifth read of the same file in a row ends doom_loop, after a hint at the third', async () => {
    h = await harness([read('a'), done(), read('a'), done(), read('a'), done(), read('a'), done(), read('a'), done('never')], { tools, agents: { default: { guardrails: 'cline' } } });
    for (const text of ['one', 'two', 'three', 'four']) expect((await runTurn(h.session, text)).outcome).toMatchObject({ status: 'completed' });
    expect(triggered(h.updates)).toEqual([{ type: 'guardrail_triggered', rule: 'loop', level: 'soft', count: 3, toolName: 'read_file' }]);
    expect((await runTurn(h.session, 'five')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
  });

  it('under seed 000’s default profile, the doom loop counts one turn’s calls: asking for the same file turn after turn is no loop', async () => {
    h = await harness([read('a'), done(), read('a'), done(), read('a'), done(), read('a'), read('a'), read('a'), done('never')], { tools });
    for (const text of ['one', 'two', 'three']) expect((await runTurn(h.session, text)).outcome).toMatchObject({ status: 'completed' });
    expect((await runTurn(h.session, 'four')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
  });

  it('a different call in between ends the run, whichever turn it is made in', async () => {
    const steps = [read('a'), done(), read('a'), done(), read('b'), done(), read('a'), done(), read('a'), done(), read('a'), done()];
    h = await harness(steps, { tools, agents: { default: { guardrails: { profile: 'cline', loop: { soft: null, hard: 4 } } } } });
    for (const text of ['one', 'two', 'three', 'four', 'five', 'six']) expect((await runTurn(h.session, text)).outcome).toMatchObject({ status: 'completed' });
  });
});

describe.each(durableTargets)('the guardrail trackers survive a restart on $name (GR-2a)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
  });

  // The loop counts across turns under seed 003's rules; a stop at 3 keeps the scripts short.
  const agents = { default: { guardrails: { profile: 'cline' as const, loop: { soft: null, hard: 3 } } } };

  async function open(steps: ScriptedStep[], sessionId?: string): Promise<{ runtime: Runtime; session: SessionHandle; updates: UpdateEnvelope[] }> {
    // Sessions that do not resume turns (issue 26): a turn cut off by a crash ends there, and stores no trackers.
    const runtime = await createRuntime({ storage: db!.open(), model: scriptedModel(steps), tools, agents, resumeTurns: false });
    runtimes.push(runtime);
    const session = sessionId ? await runtime.openSession(sessionId) : await runtime.createSession({ permissionMode: 'auto' });
    const updates: UpdateEnvelope[] = [];
    session.updates$.subscribe((u) => updates.push(u));
    return { runtime, session, updates };
  }

  it.skipIf(skip)('a runtime that opens the session after a clean shutdown goes on counting mistakes and identical calls', async () => {
    db = create();
    const first = await open([read('a'), ...misses(1, 3)]);
    expect((await runTurn(first.session, 'one')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    await first.runtime.shutdown();

    const second = await open([...misses(4, 3, 'never')], first.session.id);
    expect((await runTurn(second.session, 'two')).outcome).toMatchObject({ status: 'completed', stoppedBy: 'mistake_limit' });
    expect(triggered(second.updates)).toEqual([{ type: 'guardrail_triggered', rule: 'mistake_limit', level: 'hard', count: 6 }]);
  });

  it.skipIf(skip)('after a crash, the trackers of the last turn that ended are the session’s (the interrupted one stored none)', async () => {
    db = create();
    let hang!: () => void;
    const hanging = new Promise<void>((resolve) => (hang = resolve));
    // Turn one reads 'a' twice, in two steps; turn two is cut off by the crash while its model call waits.
    const first = await open([read('a'), read('a'), done(), () => (hang(), new Promise<never>(() => undefined))]);
    expect((await runTurn(first.session, 'one')).outcome).toMatchObject({ status: 'completed' });
    const cut = await first.session.startTurn({ clientRequestId: 'c-two', input: [{ type: 'text', text: 'two' }] });
    expect(cut.ok).toBe(true);
    await hanging;
    crash(first.runtime);

    const second = await open([read('a'), done('never')], first.session.id);
    const storage = db.open();
    try {
      const turns = await storage.listTurns(first.session.id);
      expect(turns.map((t) => [t.status, t.trackers?.loop.count ?? null])).toEqual([
        ['completed', 2],
        ['interrupted', null],
      ]);
      expect(turns[0]!.trackers?.loop.signature).toBe(signatureHash('read_file:{"path":"a"}'));
    } finally {
      await storage.close();
    }
    // The third identical read in a row, two turns and a restart later: the stop.
    expect((await runTurn(second.session, 'three')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
  });
});
