import { afterEach, describe, expect, it } from 'vitest';
import { SUMMARY_INSTRUCTION } from '../../../src/compaction/summary-request.js';
import { createRuntime, scriptedModel, type ModelCallOptions, type ModelRequest, type Runtime, type ScriptedStep } from '../../../src/index.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { harness, runTurn, startTurn, types, type Harness } from '../../support/harness.js';

/** A window small enough that one 8 000-character tool round trip reaches the auto-compact line. */
const SMALL = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };
const PROMPT = 'You are the compaction test agent.';
const BIG = 'x'.repeat(8_000);

let h: Harness | undefined;
const runtimes: Runtime[] = [];
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
  for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
});

async function small(steps: ScriptedStep[]) {
  const model = scriptedModel(steps, { capabilities: SMALL });
  h = await harness([], { model, agents: { default: { systemPrompt: PROMPT } } });
  return { h, model };
}

const texts = (request: ModelRequest) => request.messages.map((m) => (m.role === 'user' ? m.text : `[${m.role}]`));
const phases = (hh: Harness) => hh.updates.flatMap((u) => (u.update.type === 'phase_changed' ? [u.update.phase] : []));

describe('in-turn compaction (CP-1, CP-2, RT-8)', () => {
  it('compacts at the line, resubmits the compacted view with world state, and keeps system and tools byte-identical', async () => {
    const { h, model } = await small([
      { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: BIG } }] },
      { text: 'THE SUMMARY' },
      { text: 'done after compaction' },
    ]);
    const { outcome } = await runTurn(h.session, 'please read the big file');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done after compaction' });
    expect(phases(h)).toEqual(['starting', 'running_model', 'running_tools', 'compacting', 'running_model', 'completed']);

    const [first, summary, after] = model.requests as [ModelRequest, ModelRequest, ModelRequest];
    // The summary request: the agent prompt without tool rules, no tools, no world state in its input.
    expect(summary.system).toEqual([{ key: 'core/agent-system', content: PROMPT }]);
    expect(summary.tools).toEqual([]);
    expect(texts(summary).some((t) => t.startsWith('<sandbox_policy>'))).toBe(false);
    expect(summary.messages.at(-1)).toEqual({ role: 'user', text: SUMMARY_INSTRUCTION });
    // After: replay, summary, reminder, then world state re-sampled (sample 2) without a notice.
    expect(JSON.stringify(after.system)).toBe(JSON.stringify(first.system));
    expect(JSON.stringify(after.tools)).toBe(JSON.stringify(first.tools));
    const view = texts(after);
    expect(view[0]).toBe('please read the big file');
    expect(view[1]).toBe('<conversation_summary>\nTHE SUMMARY\n</conversation_summary>');
    expect(view[2]).toMatch(/^<system_reminder>\n/);
    expect(view[3]).toMatch(/^<sandbox_policy>\n/);
    expect(view).toHaveLength(4);

    const stored = await h.storage.listMessages(h.session.id);
    const [checkpoint] = await h.storage.listCompactions(h.session.id);
    expect(checkpoint).toMatchObject({ position: 1, summary: 'THE SUMMARY', replayText: 'please read the big file', rewoundAtMs: null });
    const sample2 = stored.find((m) => m.id.endsWith(':2:2:runtime/sandbox-policy'));
    expect(sample2?.sequence).toBeGreaterThan(checkpoint!.boundarySequence);
    // The boundary was the last message before compacting: the tool result.
    expect(stored.find((m) => m.id === checkpoint!.boundaryMessageId)?.message.role).toBe('tool');
  });

  it('carries the current plan in the runtime reminder', async () => {
    const plan = { plan: [{ step: 'read it', status: 'completed' }, { step: 'report', status: 'in_progress' }] };
    const { h, model } = await small([
      { text: 'plan', toolCalls: [{ name: 'update_plan', args: plan }] },
      { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: BIG } }] },
      { text: 'SUMMARY' },
      { text: 'ok' },
    ]);
    await runTurn(h.session, 'go');
    expect(texts(model.requests[3]!)[2]).toBe(
      '<system_reminder>\nEarlier parts of this conversation were compacted into the summary above.\nThe current plan:\n- [completed] read it\n- [in_progress] report\n</system_reminder>',
    );
  });

  it('fails compaction_error instead of compacting again when a compaction does not get under the line', async () => {
    const { h, model } = await small([
      { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: BIG } }] },
      { text: 'y'.repeat(20_000) },
      { text: 'never asked' },
    ]);
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'compaction_error' });
    expect(model.requests).toHaveLength(2);
    expect(phases(h).filter((p) => p === 'compacting')).toHaveLength(1);
  });

  it('fails compaction_error when the summary model call fails', async () => {
    const { h } = await small([{ text: 'reading', toolCalls: [{ name: 'read_file', args: { path: BIG } }] }, { error: 'provider' }]);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'compaction_error' });
    expect(await h.storage.listCompactions(h.session.id)).toEqual([]);
  });

  it('compacts and resubmits once on an explicit overflow with no semantic output', async () => {
    const { h, model } = await small([{ error: 'overflow' }, { text: 'SUMMARY' }, { text: 'fits now' }]);
    expect((await runTurn(h.session, 'a question')).outcome).toEqual({ status: 'completed', finalText: 'fits now' });
    expect(model.requests).toHaveLength(3);
    expect(texts(model.requests[2]!).slice(0, 2)).toEqual(['a question', '<conversation_summary>\nSUMMARY\n</conversation_summary>']);
  });

  it('never compacts for an overflow after semantic output, and resubmits only once', async () => {
    const first = await small([{ error: 'overflow', afterText: 'partial answer' }, { text: 'never' }]);
    expect((await runTurn(first.h.session, 'q')).outcome).toMatchObject({ status: 'failed', code: 'model_error' });
    expect(first.model.requests).toHaveLength(1);
    await first.h.runtime.shutdown();

    const second = await small([{ error: 'overflow' }, { text: 'SUMMARY' }, { error: 'overflow' }, { text: 'never' }]);
    expect((await runTurn(second.h.session, 'q')).outcome).toMatchObject({ status: 'failed', code: 'model_error' });
    expect(second.model.requests).toHaveLength(3);
  });

  it('a checkpoint stored but not installed fails the turn and requires a reload before new turns', async () => {
    const { h } = await small([
      { text: 'reading', toolCalls: [{ name: 'read_file', args: { path: BIG } }] },
      { text: 'SUMMARY' },
      { text: 'after reload' },
    ]);
    h.storage.failWhen('listMessages', () => true);
    expect((await runTurn(h.session, 'go', 'c1')).outcome).toMatchObject({ status: 'failed', code: 'compaction_error' });
    expect(await h.storage.listCompactions(h.session.id)).toHaveLength(1);
    expect(await h.session.startTurn({ clientRequestId: 'c2', input: [{ type: 'text', text: 'again' }] })).toEqual({
      ok: false,
      error: { code: 'ReloadRequired' },
    });
    h.storage.heal('listMessages');
    expect(await h.session.reload()).toEqual({ ok: true });
    expect((await runTurn(h.session, 'again', 'c3')).outcome).toEqual({ status: 'completed', finalText: 'after reload' });
  });
});

describe('manual compaction and rewind (RT-6, CP-3, CP-4)', () => {
  it('answers SessionActive for compact and rewind while a turn runs', async () => {
    let release: () => void = () => undefined;
    let entered: () => void = () => undefined;
    const inCall = new Promise<void>((r) => (entered = r));
    const held = async (_r: ModelRequest, _o: ModelCallOptions) => {
      entered();
      await new Promise<void>((r) => (release = r));
      return { text: 'done' };
    };
    const { h } = await small([held]);
    const turnId = await startTurn(h.session, 'hi');
    await inCall;
    expect(await h.session.compactConversation()).toEqual({ ok: false, error: { code: 'SessionActive' } });
    expect(await h.session.rewindConversation('cmp_x')).toEqual({ ok: false, error: { code: 'SessionActive' } });
    release();
    await h.session.waitForTurn(turnId);
  });

  it('compacts on demand into a checkpoint the next turn starts from; nothing to compact is a typed error', async () => {
    const { h, model } = await small([{ text: 'first answer' }, { text: 'MANUAL SUMMARY' }, { text: 'second answer' }]);
    expect(await h.session.compactConversation()).toMatchObject({ ok: false, error: { code: 'NothingToCompact' } });
    await runTurn(h.session, 'first question');
    const compacted = await h.session.compactConversation();
    expect(compacted).toMatchObject({ ok: true });
    const [row] = await h.storage.listCompactions(h.session.id);
    expect(compacted).toEqual({ ok: true, compactionId: row!.id });
    expect(model.requests[1]!.tools).toEqual([]);
    await runTurn(h.session, 'second question');
    expect(texts(model.requests[2]!).slice(0, 4)).toEqual([
      'first question',
      '<conversation_summary>\nMANUAL SUMMARY\n</conversation_summary>',
      expect.stringMatching(/^<system_reminder>/),
      'second question',
    ]);
  });

  it('rewinds to an earlier checkpoint without injecting anything twice, and refuses unknown ids', async () => {
    const { h, model } = await small([
      { text: 'answer one' },
      { text: 'SUMMARY A' },
      { text: 'answer two' },
      { text: 'SUMMARY B' },
      { text: 'answer three' },
    ]);
    await runTurn(h.session, 'question one');
    const a = await h.session.compactConversation();
    await runTurn(h.session, 'question two');
    const b = await h.session.compactConversation();
    expect(a.ok && b.ok).toBe(true);
    expect(await h.session.rewindConversation('cmp_unknown')).toMatchObject({ ok: false, error: { code: 'UnknownCompaction' } });
    expect(await h.session.rewindConversation(a.ok ? a.compactionId : '')).toEqual({ ok: true });

    await runTurn(h.session, 'question three');
    const view = texts(model.requests.at(-1)!);
    const count = (needle: string) => view.filter((t) => t.includes(needle)).length;
    expect(count('SUMMARY A')).toBe(1);
    expect(count('SUMMARY B')).toBe(0);
    expect(count('question one')).toBe(1);
    expect(count('question two')).toBe(1);
    expect(count('<system_reminder>')).toBe(1);
    expect(view.slice(0, 3)).toEqual(['question one', '<conversation_summary>\nSUMMARY A\n</conversation_summary>', expect.stringMatching(/^<system_reminder>/)]);
    expect(view).toContain('question two');
    expect(view.at(-1)).toBe('question three');
    const rows = await h.storage.listCompactions(h.session.id);
    expect(rows.map((r) => r.rewoundAtMs === null)).toEqual([true, false]);
  });

  it('a manual compaction whose checkpoint cannot be installed answers ReloadRequired and blocks turns until reload', async () => {
    const { h } = await small([{ text: 'one' }, { text: 'SUMMARY' }, { text: 'two' }]);
    await runTurn(h.session, 'q1', 'c1');
    h.storage.failWhen('listMessages', () => true);
    expect(await h.session.compactConversation()).toMatchObject({ ok: false, error: { code: 'ReloadRequired' } });
    expect(await h.session.compactConversation()).toEqual({ ok: false, error: { code: 'ReloadRequired' } });
    expect(await h.session.startTurn({ clientRequestId: 'c2', input: [{ type: 'text', text: 'q2' }] })).toEqual({
      ok: false,
      error: { code: 'ReloadRequired' },
    });
    expect(await h.session.reload()).toMatchObject({ ok: false });
    h.storage.heal();
    expect(await h.session.reload()).toEqual({ ok: true });
    expect((await runTurn(h.session, 'q2', 'c2')).outcome).toEqual({ status: 'completed', finalText: 'two' });
  });
});

describe.each(durableTargets)('checkpoints after a restart on $name (CP-3)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });

  it.skipIf(skip)('loads the latest checkpoint projection plus later messages, and keeps a rewind', async () => {
    db = create();
    const first = await createRuntime({
      storage: db.open(),
      model: scriptedModel([{ text: 'a1' }, { text: 'SUMMARY ONE' }, { text: 'a2' }, { text: 'SUMMARY TWO' }]),
    });
    runtimes.push(first);
    const session = await first.createSession();
    await runTurn(session, 'q1');
    const one = await session.compactConversation();
    await runTurn(session, 'q2');
    await session.compactConversation();
    await session.rewindConversation(one.ok ? one.compactionId : '');
    await first.shutdown();

    const model = scriptedModel([{ text: 'a3' }]);
    const second = await createRuntime({ storage: db.open(), model });
    runtimes.push(second);
    const preview = await second.inspectContextWindow(session.id);
    const view = preview.conversation.map((m) => (m.role === 'user' ? m.text : `[${m.role}]`));
    expect(view.slice(0, 3)).toEqual(['q1', '<conversation_summary>\nSUMMARY ONE\n</conversation_summary>', expect.stringMatching(/^<system_reminder>/)]);
    expect(view.filter((t) => t.includes('SUMMARY TWO'))).toEqual([]);
    expect(view).toContain('q2');
    expect(preview.provenance.slice(0, 3)).toEqual(['synthetic', 'synthetic', 'synthetic']);
    const reopened = await second.openSession(session.id);
    // Numbering continues above what the first runtime issued; the ring holds this opening's updates.
    const opened = reopened.snapshot().lastUpdateSequence;
    expect((await runTurn(reopened, 'q3')).outcome).toEqual({ status: 'completed', finalText: 'a3' });
    const replay = reopened.replayUpdates(opened);
    expect(replay.ok && types(replay.updates)).toContain('turn_finished');
  });
});
