import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { renderSandboxPolicy, replacementText } from '../../../src/context/world-state/index.js';
import { sqliteStorage, type RequestMessage, type StartTurnResult } from '../../../src/index.js';
import { writeSkill } from '../../skills/skill-fixtures.js';
import { runTurn, type Harness } from '../../support/harness.js';
import { holding, storedWorldState, useTempDirs, userTexts, workspaceHarness } from '../../support/workspace.js';

const tempDir = useTempDirs('turnchart-skills-');

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const user = (text: string): RequestMessage => ({ role: 'user', text });
const skillText = (name: string, file: string, body: string) => `<skill name="${name}" path="${file}">\n${body}\n</skill>`;

async function accepted(result: Promise<StartTurnResult>): Promise<string> {
  const started = await result;
  if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
  return started.turnId;
}

describe('skills as turn input (RT-1, CW-8)', () => {
  it('writes the skill snapshot before the user message, and the model sees it first', async () => {
    const dir = await tempDir();
    const review = await writeSkill(dir, 'review', '---\ndescription: Reviews a diff\n---\nCheck every line.\nReport findings.\n');
    h = await workspaceHarness([{ text: 'reviewed' }], { skills: { dir } });
    const turnId = await accepted(h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'skill', name: 'review' }, { type: 'text', text: 'go' }] }));
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'reviewed' });

    const snapshot = skillText('review', review, 'Check every line.\nReport findings.\n');
    const stored = await h.storage.listMessages(h.session.id);
    expect(stored.slice(0, 2).map((m) => ({ turnId: m.turnId, message: m.message }))).toEqual([
      { turnId, message: { role: 'user', kind: 'skill_instruction', text: snapshot, skill: { name: 'review', path: review } } },
      { turnId, message: { role: 'user', kind: 'normal', text: 'go' } },
    ]);
    expect(stored[0]!.sequence).toBeLessThan(stored[1]!.sequence);
    // Both are written by the turn's first step, skill first.
    const begin = h.storage.calls.find((c) => c.method === 'beginTurn')!;
    expect((begin.args[1] as { message: { kind: string } }[]).map((m) => m.message.kind)).toEqual(['skill_instruction', 'normal']);

    expect(h.model.requests).toHaveLength(1);
    expect(h.model.requests[0]!.messages).toEqual([
      user(snapshot),
      user('go'),
      user(`<available_skills>\n- review: Reviews a diff (${review})\n</available_skills>`),
      user(renderSandboxPolicy('ask')),
    ]);
  });

  it('answers a retried request with the accepted turn even after the skill changed or vanished', async () => {
    const dir = await tempDir();
    const file = await writeSkill(dir, 'review', 'Check every line.\n');
    h = await workspaceHarness([{ text: 'reviewed' }], { skills: { dir } });
    const command = { clientRequestId: 'c1', input: [{ type: 'skill', name: 'review' }, { type: 'text', text: 'go' }] };
    const turnId = await accepted(h.session.startTurn(command));
    await h.session.waitForTurn(turnId);
    await writeFile(file, 'z'.repeat(40_000));
    expect(await h.session.startTurn(command)).toEqual({ ok: true, turnId });
    expect(h.model.requests).toHaveLength(1);
  });

  it('keeps several skills in input order before the user text, snapshotting a repeated one once', async () => {
    const dir = await tempDir();
    const review = await writeSkill(dir, 'review', 'Review body.');
    const lint = await writeSkill(dir, 'lint', 'Lint body.');
    h = await workspaceHarness([{ text: 'ok' }], { skills: { dir } });
    const input = [
      { type: 'skill', name: 'review' },
      { type: 'text', text: 'first part' },
      { type: 'skill', name: 'lint' },
      { type: 'skill', name: 'review' },
      { type: 'text', text: 'second part' },
    ];
    const turnId = await accepted(h.session.startTurn({ clientRequestId: 'c1', input }));
    await h.session.waitForTurn(turnId);
    expect(userTexts(h.model.requests[0]!.messages).slice(0, 3)).toEqual([
      skillText('review', review, 'Review body.'),
      skillText('lint', lint, 'Lint body.'),
      'first part\n\nsecond part',
    ]);
  });

  it('a SKILL.md edited after acceptance does not change the accepted turn; a new turn reads the new body', async () => {
    const dir = await tempDir();
    const file = await writeSkill(dir, 'review', 'Version one.');
    const held = holding(sqliteStorage({ filename: ':memory:' }), 'beginTurn');
    let modelReached: () => void = () => undefined;
    let releaseModel: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (modelReached = resolve));
    const modelGate = new Promise<void>((resolve) => (releaseModel = resolve));
    h = await workspaceHarness(
      [
        async () => {
          modelReached();
          await modelGate;
          return { text: 'reading', toolCalls: [{ id: 'r1', name: 'read_file', args: { path: 'x' } }] };
        },
        { text: 'done with one' },
        { text: 'done with three' },
      ],
      { skills: { dir }, storage: held.storage },
    );
    const input = [
      { type: 'skill', name: 'review' },
      { type: 'text', text: 'go' },
    ];
    const turnId = await accepted(h.session.startTurn({ clientRequestId: 'c1', input }));
    // Accepted, not yet written: the file changes before the turn's first write…
    await held.reached;
    await writeSkill(dir, 'review', 'Version two.');
    held.release();
    // …and again while the first model call is in flight.
    await reached;
    await writeSkill(dir, 'review', 'Version three.');
    releaseModel();
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done with one' });

    const one = skillText('review', file, 'Version one.');
    expect(h.model.requests).toHaveLength(2);
    for (const request of h.model.requests) {
      expect(request.messages[0]).toEqual(user(one));
      expect(request.messages.some((m) => m.role === 'user' && /Version (two|three)/.test(m.text))).toBe(false);
    }
    const snapshots = (await h.storage.listMessages(h.session.id)).filter((m) => m.message.role === 'user' && m.message.kind === 'skill_instruction');
    expect(snapshots.map((m) => m.message.role === 'user' && m.message.text)).toEqual([one]);

    const next = await accepted(h.session.startTurn({ clientRequestId: 'c2', input: [{ type: 'skill', name: 'review' }, { type: 'text', text: 'again' }] }));
    expect(await h.session.waitForTurn(next)).toEqual({ status: 'completed', finalText: 'done with three' });
    const three = skillText('review', file, 'Version three.');
    const texts = userTexts(h.model.requests[2]!.messages);
    expect(texts[0]).toBe(one);
    expect(texts.slice(-2)).toEqual([three, 'again']);
  });

  describe('refused before acceptance', () => {
    it('a body of 8 000 tokens or more → SkillTooLarge: no turn row, no update, no model call', async () => {
      const dir = await tempDir();
      await writeSkill(dir, 'huge', '---\ndescription: Too much\n---\n' + 'x'.repeat(32_000));
      const fits = await writeSkill(dir, 'big', 'y'.repeat(31_000));
      h = await workspaceHarness([{ text: 'fine' }], { skills: { dir } });
      const refused = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'skill', name: 'huge' }, { type: 'text', text: 'go' }] });
      expect(refused).toEqual({ ok: false, error: { code: 'SkillTooLarge', name: 'huge', tokens: expect.any(Number) } });
      if (!refused.ok && refused.error.code === 'SkillTooLarge') expect(refused.error.tokens).toBeGreaterThanOrEqual(8_000);
      expect(await h.storage.listTurns(h.session.id)).toEqual([]);
      expect(await h.storage.listMessages(h.session.id)).toEqual([]);
      expect(h.model.requests).toHaveLength(0);
      expect(h.updates).toEqual([]);
      expect(h.session.snapshot().runtime).toEqual({ kind: 'idle' });

      // The refused request id was never accepted: it can start a turn, and a body under the limit is taken.
      const turnId = await accepted(h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'skill', name: 'big' }, { type: 'text', text: 'go' }] }));
      expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'fine' });
      expect(h.model.requests[0]!.messages[0]).toEqual(user(skillText('big', fits, 'y'.repeat(31_000))));
      expect((await h.storage.listTurns(h.session.id)).map((t) => t.id)).toEqual([turnId]);
    });

    it('unknown, path-like and disabled skills → UnknownSkill; a disabled skill is not in the catalog either', async () => {
      const root = await tempDir();
      const dir = path.join(root, 'skills');
      const review = await writeSkill(dir, 'review', '---\ndescription: Reviews a diff\n---\nbody');
      await writeSkill(dir, 'secret', '---\ndescription: Hidden\n---\nsecret body');
      await writeSkill(root, 'outside', 'not a skill of this directory');
      h = await workspaceHarness([{ text: 'fine' }], { skills: { dir, disabled: ['secret'] } });

      for (const name of ['nope', 'secret', '../../outside']) {
        const result = await h.session.startTurn({ clientRequestId: `c-${name}`, input: [{ type: 'skill', name }, { type: 'text', text: 'go' }] });
        expect(result).toEqual({ ok: false, error: { code: 'UnknownSkill', name } });
      }
      expect(await h.storage.listTurns(h.session.id)).toEqual([]);
      expect(h.model.requests).toHaveLength(0);
      expect(h.updates).toEqual([]);

      await runTurn(h.session, 'go');
      const catalog = h.model.requests[0]!.messages.find((m) => m.role === 'user' && m.text.startsWith('<available_skills>'));
      expect(catalog).toEqual(user(`<available_skills>\n- review: Reviews a diff (${review})\n</available_skills>`));
      expect(h.model.requests[0]!.messages.some((m) => m.role === 'user' && (m.text.includes('secret') || m.text.includes('Hidden')))).toBe(false);
    });

    it('a skill part without a skills directory → UnknownSkill', async () => {
      h = await workspaceHarness([{ text: 'never' }]);
      const result = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'skill', name: 'review' }, { type: 'text', text: 'go' }] });
      expect(result).toEqual({ ok: false, error: { code: 'UnknownSkill', name: 'review' } });
      expect(await h.storage.listTurns(h.session.id)).toEqual([]);
    });

    it('skill parts without any non-blank text → EmptyInput', async () => {
      const dir = await tempDir();
      await writeSkill(dir, 'review', 'body');
      h = await workspaceHarness([{ text: 'never' }], { skills: { dir } });
      const inputs = [[{ type: 'skill', name: 'review' }], [{ type: 'skill', name: 'review' }, { type: 'text', text: ' \n\t ' }], []];
      for (const [i, input] of inputs.entries()) {
        expect(await h.session.startTurn({ clientRequestId: `c${i}`, input })).toEqual({ ok: false, error: { code: 'EmptyInput' } });
      }
      expect(await h.storage.listTurns(h.session.id)).toEqual([]);
      expect(h.model.requests).toHaveLength(0);
      expect(h.updates).toEqual([]);
    });
  });

  it('the catalog reaches the model as world state, with scan warnings kept out of it', async () => {
    const dir = await tempDir();
    const review = await writeSkill(dir, 'review', '---\ndescription: Reviews a diff\n---\nbody');
    const lint = await writeSkill(dir, 'lint', 'no frontmatter, no description');
    await writeSkill(dir, 'broken', '---\ndescription: never closed\n');
    await writeFile(path.join(dir, 'notes.md'), 'a loose file, not a skill folder');
    const warnings: string[] = [];
    h = await workspaceHarness([{ text: 'one' }, { text: 'two' }], { skills: { dir }, warn: (message) => warnings.push(message) });
    const first = await runTurn(h.session, 'go');

    const catalog = `<available_skills>\n- lint (${lint})\n- review: Reviews a diff (${review})\n</available_skills>`;
    expect(h.model.requests[0]!.messages).toEqual([user('go'), user(catalog), user(renderSandboxPolicy('ask'))]);
    expect(storedWorldState(await h.storage.listMessages(h.session.id))[0]).toEqual({
      id: `world-state:${first.turnId}:1:1:skills/catalog`,
      section: 'skills/catalog',
      text: catalog,
    });
    expect(warnings.some((w) => w.includes('broken'))).toBe(true);
    expect(h.model.requests[0]!.messages.some((m) => m.role === 'user' && m.text.includes('broken'))).toBe(false);

    // A skill added between turns: the next turn gets the whole catalog again, as a replacement.
    const deploy = await writeSkill(dir, 'deploy', '---\ndescription: Ships it\n---\nbody');
    const second = await runTurn(h.session, 'again');
    const updated = `<available_skills>\n- deploy: Ships it (${deploy})\n- lint (${lint})\n- review: Reviews a diff (${review})\n</available_skills>`;
    expect(h.model.requests[1]!.messages.slice(-2)).toEqual([user('again'), user(replacementText('skills/catalog', updated))]);
    expect(storedWorldState(await h.storage.listMessages(h.session.id)).at(-1)).toEqual({
      id: `world-state:${second.turnId}:1:1:skills/catalog`,
      section: 'skills/catalog',
      text: replacementText('skills/catalog', updated),
    });
  });
});
