import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startHost, type RunningHost } from '../../src/host/host.js';
import { activeStateIds } from '../../src/inspect/actor-state.js';
import { defineTool, scriptedModel, sqliteStorage, type ScriptedStep } from '../../src/index.js';
import type { SessionHandle } from '../../src/runtime/session-handle.js';
import { ARTIFACTS, buildInspectorPage, launchBrowser, type Browser } from '../support/browser.js';
import { call } from '../support/host.js';
import { routedModel } from '../support/routed-model.js';
import { CRASH_AGENTS, LEAD_PROMPT, WORKER_PROMPT } from '../support/subagent-agents.js';
import { until } from '../support/poll.js';
import { withHook } from '../support/storage-hook.js';

/** A point a test holds the host at until it lets go: `reached` once something waits on it. */
function gate() {
  let open: () => void = () => undefined;
  let arrive: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  return {
    reached,
    open: () => open(),
    wait: () => {
      arrive();
      return opened;
    },
  };
}

let browser: Browser | { unavailable: string };
let assets: string;
let host: RunningHost | undefined;
let dir: string;

beforeAll(async () => {
  browser = await launchBrowser();
  if ('unavailable' in browser) {
    console.log(`inspector page tests skipped: ${browser.unavailable}`);
    return;
  }
  assets = await buildInspectorPage();
}, 120_000);
afterAll(async () => {
  if (!('unavailable' in browser)) await browser.close();
  if (assets) await rm(assets, { recursive: true, force: true });
});
afterEach(async () => {
  await host?.close();
  host = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The state ids the page highlights as active. */
async function pageActive(page: Page): Promise<string[]> {
  return (await page.$$eval('[data-state][data-active="true"]', (els) => els.map((e) => e.getAttribute('data-state')!))).sort();
}

/** The active state ids of the session actor and of every chart actor under it, as XState holds them. */
function actorActive(handle: SessionHandle): string[] {
  const ids: string[] = [];
  type Snap = { status: string; value?: unknown; machine?: { id: string }; children?: Record<string, { getSnapshot(): unknown } | undefined> };
  const walk = (s: Snap): void => {
    if (s.machine && s.status === 'active') ids.push(...activeStateIds(s.machine.id, s.value as string));
    for (const child of Object.values(s.children ?? {})) if (child) walk(child.getSnapshot() as Snap);
  };
  walk(handle.actor.getSnapshot() as unknown as Snap);
  return ids.sort();
}

/** Waits until the page highlights exactly the actors' configuration, then asserts it. */
async function expectStop(page: Page, handle: SessionHandle, state: string, shot: string): Promise<void> {
  await page.waitForSelector(`[data-state="${state}"][data-active="true"]`, { state: 'attached', timeout: 15_000 });
  expect(actorActive(handle)).toContain(state);
  await until(`the page to show the configuration at ${state}`, async () => JSON.stringify(await pageActive(page)) === JSON.stringify(actorActive(handle)));
  expect(await pageActive(page)).toEqual(actorActive(handle));
  await page.screenshot({ path: path.join(ARTIFACTS, shot), fullPage: false });
}

describe('the inspector page in headless Chromium', () => {
  it('follows a turn through its chart, with the highlighted states equal to the actors’ snapshots, and answers an approval', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    const begin = gate();
    const model = gate();
    const authorize = gate();
    const publish = defineTool({
      name: 'publish_note',
      description: 'Publish a note (asks first)',
      effect: 'write',
      input: z.object({ path: z.string(), text: z.string() }),
      authorize: async (args) => {
        await authorize.wait();
        return { decision: 'ask', paths: [args.path] };
      },
      execute: async () => ({ status: 'succeeded', content: 'published' }),
    });
    const steps: ScriptedStep[] = [
      async () => {
        await model.wait();
        return { text: 'I will publish the note.', toolCalls: [{ name: 'publish_note', args: { path: 'notes/build.md', text: 'The build is green', apiKey: 'sk-hidden' } }] };
      },
      { text: 'Published notes/build.md.' },
    ];
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-page-'));
    let holdBegin = true;
    const storage = withHook(sqliteStorage({ filename: path.join(dir, 'db.sqlite') }), async (method) => {
      if (method === 'beginTurn' && holdBegin) await begin.wait();
    });
    host = await startHost({ host: '127.0.0.1', port: 0, storage, workspace: dir, model: scriptedModel(steps), idleTtlSeconds: 300, token: 'page-token', inspectorAssets: assets, runtime: { tools: [publish] }, warn: () => undefined });
    const auth = { authorization: 'Bearer page-token' };
    const created = await call(host.url, 'POST', '/sessions', { permissionMode: 'ask' }, auth);
    const sessionId = created.body.sessionId as string;
    const handle = host.runtime.openHandle(sessionId)!;

    const page = await (browser as Browser).context.newPage();
    // What the page logs as an error: a script's, or a resource it asked for and did not get (a missing icon was one).
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${host.url}/inspect?token=page-token`);
    expect(new URL(page.url()).searchParams.get('token')).toBeNull();
    await page.click(`[data-session="${sessionId}"]`);
    expect(new URL(page.url()).searchParams.get('session')).toBe(sessionId);
    await expectStop(page, handle, 'session.idle', 'inspect-0-idle.png');

    const submitted = call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'Publish a note that the build is green' }] }, auth);
    await begin.reached;
    await expectStop(page, handle, 'turn.starting', 'inspect-1-starting.png');
    holdBegin = false;
    begin.open();
    const turnId = (await submitted).body.turnId as string;

    await model.reached;
    await expectStop(page, handle, 'turn.running_model.calling', 'inspect-2-running_model.png');
    model.open();

    await authorize.reached;
    await expectStop(page, handle, 'turn.running_tools.tool_call.executing', 'inspect-3-running_tools.png');
    expect(await page.$('[data-state="toolCall.active"][data-active="true"]')).not.toBeNull();
    authorize.open();

    await expectStop(page, handle, 'turn.running_tools.tool_call.waiting_permission', 'inspect-4-waiting_permission.png');
    expect(await page.textContent('.approval')).toContain('notes/build.md');
    // The transition just taken is marked on the chart.
    expect(await page.$('[data-edge].taken, .internal.taken')).not.toBeNull();
    await page.click('[data-action="allow-once"]');

    await page.waitForSelector('.status-line [data-phase="completed"]', { timeout: 15_000 });
    expect((await call(host.url, 'GET', `/sessions/${sessionId}/turns/${turnId}`, undefined, auth)).body).toMatchObject({ status: 'completed' });
    await until('the session is idle again', () => actorActive(handle).includes('session.idle'));
    await until('the page shows it', async () => JSON.stringify(await pageActive(page)) === JSON.stringify(actorActive(handle)));
    expect(await pageActive(page)).toEqual(actorActive(handle));
    // The ended turn keeps its last configuration, drawn as such.
    expect(await page.$('[data-state="turn.completed"][data-last="true"]')).not.toBeNull();
    await page.waitForSelector(`[data-session="${sessionId}"] .pill.completed`, { timeout: 15_000 });
    await page.fill('.type-filter', 'turn_finished');
    await page.waitForSelector('.timeline .row[data-kind="update"]');
    await page.click('.timeline .row[data-kind="update"]');
    expect(await page.textContent('.detail-text')).toContain('"completed"');
    expect(await page.textContent('body')).not.toContain('sk-hidden');
    // After the turn's first message, its states and context come as deltas: the page rebuilds the whole state at each entry.
    await page.fill('.type-filter', 'effect.done');
    await page.locator('.timeline .row[data-kind="snapshot"]').last().click();
    const detail = (await page.textContent('.detail-text')) ?? '';
    expect(detail).toContain('"change"');
    expect(detail).toMatch(/turn \(x:\d+\) done\n {2}states: turn, turn\.completed\n {2}context: \{/);
    expect(detail).toContain('"finalText": "Published notes/build.md."');
    expect(detail).toContain('"turnId"');
    expect(detail).not.toContain('sk-hidden');
    await page.fill('.type-filter', '');
    await page.screenshot({ path: path.join(ARTIFACTS, 'inspect-5-completed.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('stays usable with 100 sessions and a 10 000-delta turn: the timeline draws a bounded number of rows', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    const DELTAS = 10_000;
    const SESSIONS = 100;
    const steps: ScriptedStep[] = [{ deltas: Array.from({ length: DELTAS }, (_, i) => `w${i} `) }, ...Array.from({ length: SESSIONS }, () => ({ text: 'ok' }))];
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-page-'));
    host = await startHost({ host: '127.0.0.1', port: 0, db: path.join(dir, 'db.sqlite'), workspace: dir, model: scriptedModel(steps), idleTtlSeconds: 300, inspectorAssets: assets, warn: () => undefined });
    const url = host.url;
    const big = (await call(url, 'POST', '/sessions', {})).body.sessionId as string;
    const page = await (browser as Browser).context.newPage();
    await page.goto(`${url}/inspect?session=${big}`);
    await page.waitForSelector('[data-state="session.idle"][data-active="true"]', { state: 'attached' });
    const turn = await call(url, 'POST', `/sessions/${big}/turns`, { clientRequestId: 'big', input: [{ type: 'text', text: 'talk a lot' }] });
    expect((await call(url, 'GET', `/sessions/${big}/turns/${turn.body.turnId as string}?wait=60`)).body).toMatchObject({ status: 'completed' });
    for (let i = 0; i < SESSIONS; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, j) => {
          const id = (await call(url, 'POST', '/sessions', {})).body.sessionId as string;
          const t = await call(url, 'POST', `/sessions/${id}/turns`, { clientRequestId: `r${i + j}`, input: [{ type: 'text', text: 'hi' }] });
          await call(url, 'GET', `/sessions/${id}/turns/${t.body.turnId as string}?wait=60`);
        }),
      );
    }
    await until('every session is listed', async () => (await page.locator('[data-session]').count()) === SESSIONS + 1, 30_000);
    await page.fill('.type-filter', 'text_delta');
    await until('every delta is in the timeline', async () => ((await page.textContent('.timeline .count')) ?? '').startsWith(`${DELTAS.toLocaleString('en-US')} of`), 30_000);
    const rows = await page.$$eval('.timeline .row', (els) => els.length);
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThanOrEqual(80);
    // Scrolled to the middle, it draws the middle, still a bounded number of rows.
    await page.$eval('.timeline-scroll', (el) => (el.scrollTop = el.scrollHeight / 2));
    const middle = async () => (await page.$$eval('.timeline .row .seq', (els) => els.map((e) => Number(e.textContent!.slice(1))))).some((n) => n > 4_000 && n < 6_000);
    await until('the middle of the turn is drawn', middle);
    expect(await page.$$eval('.timeline .row', (els) => els.length)).toBeLessThanOrEqual(80);
    // The session list filters as one types.
    await page.fill('.session-filter', big.slice(4, 16));
    await until('the list is filtered', async () => (await page.locator('[data-session]').count()) === 1);
    await page.fill('.session-filter', '');
    await page.screenshot({ path: path.join(ARTIFACTS, 'inspect-many.png') });
    await page.close();
  }, 180_000);

  it('lists a session\'s sub-agent under its actors, and opens the child, which links back to its parent', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    const { port } = routedModel({
      lead: { prompt: LEAD_PROMPT, steps: [{ text: 'delegating', toolCalls: [{ id: 'spawn-1', name: 'spawn_agent', args: { agent: 'worker', task: 'say hi' } }] }, { text: 'done' }] },
      worker: { prompt: WORKER_PROMPT, steps: [{ text: 'hi' }] },
    });
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-page-'));
    host = await startHost({ host: '127.0.0.1', port: 0, db: path.join(dir, 'db.sqlite'), workspace: dir, model: port, idleTtlSeconds: 300, token: 'page-token', inspectorAssets: assets, runtime: { agents: CRASH_AGENTS }, warn: () => undefined });
    const parent = await host.runtime.createSession({ agent: 'lead', permissionMode: 'ask' });
    const page = await (browser as Browser).context.newPage();
    await page.goto(`${host.url}/inspect?token=page-token&session=${parent.id}`);
    await page.waitForSelector('[data-state="session.idle"][data-active="true"]', { state: 'attached' });
    expect(await page.$('[data-child-session]')).toBeNull();
    const started = await parent.startTurn({ clientRequestId: 'links-1', input: [{ type: 'text', text: 'delegate' }] });
    expect(started.ok).toBe(true);
    let childId = '';
    await until('the child is stored', async () => ((childId = (await host!.runtime.agentLinks(parent.id)).children[0]?.sessionId ?? ''), childId !== ''));
    const entry = await page.waitForSelector(`[data-child-session="${childId}"]`, { timeout: 15_000 });
    expect(await entry.textContent()).toContain(`sub-agent worker · ${childId}`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'inspect-sub-agent.png') });
    await page.click(`[data-child-session="${childId}"] a`);
    await page.waitForSelector(`[data-parent-session="${parent.id}"]`, { timeout: 15_000 });
    expect(new URL(page.url()).searchParams.get('session')).toBe(childId);
    expect(await page.$('[data-child-session]')).toBeNull();
    await page.close();
  }, 60_000);

  it('shows each session\'s owner in the list and the header; an admin sees every principal\'s sessions, alice only hers (issue 25)', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-page-'));
    host = await startHost({
      host: '127.0.0.1',
      port: 0,
      db: path.join(dir, 'db.sqlite'),
      workspace: dir,
      model: scriptedModel([{ text: 'hi' }]),
      idleTtlSeconds: 300,
      inspectorAssets: assets,
      // The page's token is the principal; `admin:` before it makes an admin.
      authenticate: (request) => {
        const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
        if (!token) return null;
        return token.startsWith('admin:') ? { principal: token.slice('admin:'.length), roles: ['admin'] } : { principal: token, roles: [] };
      },
      warn: () => undefined,
    });
    const url = host.url;
    const create = async (token: string) => (await call(url, 'POST', '/sessions', { permissionMode: 'ask' }, { authorization: `Bearer ${token}` })).body.sessionId as string;
    const alices = await create('alice');
    const bobs = await create('bob');
    // A session stored without an owner (as before principals): only an admin sees it, with no owner shown.
    const ownerless = (await host.runtime.createSession({})).id;
    /** Each listed session with its owner label, as the page shows them. */
    const ownersIn = async (page: Page): Promise<[string, string | null][]> =>
      page.$$eval('[data-session]', (els) => els.map((e): [string, string | null] => [e.getAttribute('data-session')!, e.querySelector('.pill.owner')?.textContent ?? null]));

    // As an admin: every session, each with its owner.
    const admin = await (browser as Browser).context.newPage();
    await admin.goto(`${url}/inspect?token=admin:root`);
    await until('the admin\'s list has every session', async () => (await admin.locator('[data-session]').count()) === 3);
    expect(new Map(await ownersIn(admin))).toEqual(
      new Map([
        [alices, 'owner: alice'],
        [bobs, 'owner: bob'],
        [ownerless, null],
      ]),
    );
    await admin.click(`[data-session="${alices}"]`);
    await admin.waitForSelector('.status-line .pill.owner[data-owner="alice"]', { timeout: 15_000 });
    expect(await admin.textContent('.status-line .pill.owner')).toBe('owner: alice');
    await admin.screenshot({ path: path.join(ARTIFACTS, 'inspect-owner.png') });
    await admin.screenshot({ path: '/tmp/inspector-owner.png' });
    // The ownerless session's header names no owner.
    await admin.click(`[data-session="${ownerless}"]`);
    await admin.waitForSelector(`.status-line .session-id:text("${ownerless}")`, { timeout: 15_000 });
    await admin.waitForSelector('.status-line [data-phase="idle"]', { timeout: 15_000 });
    expect(await admin.$('.status-line .pill.owner')).toBeNull();
    await admin.close();

    // As alice: only her session, in the list as it starts and as sessions come.
    const alice = await (browser as Browser).context.newPage();
    await alice.goto(`${url}/inspect?token=alice`);
    await alice.waitForSelector(`[data-session="${alices}"]`, { timeout: 15_000 });
    expect(await ownersIn(alice)).toEqual([[alices, 'owner: alice']]);
    const bobsNext = await create('bob');
    const alicesNext = await create('alice');
    await alice.waitForSelector(`[data-session="${alicesNext}"]`, { timeout: 15_000 });
    expect(new Set((await ownersIn(alice)).map(([id]) => id))).toEqual(new Set([alices, alicesNext]));
    expect(await alice.$(`[data-session="${bobsNext}"]`)).toBeNull();
    await alice.click(`[data-session="${alices}"]`);
    await alice.waitForSelector('.status-line .pill.owner[data-owner="alice"]', { timeout: 15_000 });
    await alice.screenshot({ path: path.join(ARTIFACTS, 'inspect-owner-alice.png') });
    await alice.screenshot({ path: '/tmp/inspector-owner-alice.png' });
    // Bob's session, asked for by its id, is no session of hers: its stream answers UnknownSession.
    await alice.goto(`${url}/inspect?session=${bobs}`);
    await until('the page says the session is unknown', async () => ((await alice.textContent('.connection')) ?? '').includes('UnknownSession'));
    expect(await alice.$('.status-line .pill.owner')).toBeNull();
    await alice.close();
  }, 120_000);

  it('creates a session of the agent picked in the select, shows its agent, and shows a running tool call\'s progress until the call ends', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    const job = gate();
    const answer = gate();
    const slowJob = defineTool({
      name: 'slow_job',
      description: 'A job that reports its progress',
      effect: 'read',
      input: z.object({}),
      execute: async (_args, { progress }) => {
        progress({ progress: 1, total: 5 });
        progress({ progress: 2, total: 5, message: 'indexing the diff' });
        await job.wait();
        return { status: 'succeeded', content: 'done' };
      },
    });
    const steps: ScriptedStep[] = [
      { text: 'Running the job.', toolCalls: [{ name: 'slow_job', args: {} }] },
      async () => {
        await answer.wait();
        return { text: 'Reviewed.' };
      },
    ];
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-page-'));
    host = await startHost({
      host: '127.0.0.1',
      port: 0,
      db: path.join(dir, 'db.sqlite'),
      workspace: dir,
      model: scriptedModel(steps),
      idleTtlSeconds: 300,
      token: 'page-token',
      inspectorAssets: assets,
      runtime: { tools: [slowJob], agents: { reviewer: { systemPrompt: 'You review changes. Read; never write.', tools: ['read_file', 'slow_job'] } } },
      agentNotes: { reviewer: { description: 'Reviews changes: reads, never writes.' } },
      warn: () => undefined,
    });
    const auth = { authorization: 'Bearer page-token' };
    const page = await (browser as Browser).context.newPage();
    await page.goto(`${host.url}/inspect?token=page-token`);
    await page.waitForSelector('.agent-select option[value="reviewer"]', { state: 'attached' });
    // The host's default agent is picked until someone picks another; each option tells what its agent is for.
    expect(await page.inputValue('.agent-select')).toBe('default');
    expect(await page.getAttribute('.agent-select option[value="reviewer"]', 'title')).toContain('Reviews changes: reads, never writes.');
    await page.selectOption('.agent-select', 'reviewer');
    expect(await page.textContent('.agent-about')).toContain('Reviews changes: reads, never writes.');
    expect(await page.textContent('.agent-about')).toContain('slow_job');

    await page.click('[data-action="new-session"]');
    await until('the page opens the session it created', () => new URL(page.url()).searchParams.get('session') !== null);
    const sessionId = new URL(page.url()).searchParams.get('session')!;
    expect((await call(host.url, 'GET', `/sessions/${sessionId}`, undefined, auth)).status).toBe(200);
    const listed = (await call(host.url, 'GET', '/sessions', undefined, auth)).body.sessions as { sessionId: string; agent: string }[];
    expect(listed.find((s) => s.sessionId === sessionId)?.agent).toBe('reviewer');
    await page.waitForSelector('.status-line .pill.agent[data-agent="reviewer"]', { timeout: 15_000 });
    await page.waitForSelector(`[data-session="${sessionId}"]`, { timeout: 15_000 });
    expect(await page.textContent(`[data-session="${sessionId}"]`)).toContain('reviewer');

    const submitted = await call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'review-1', input: [{ type: 'text', text: 'Review the change' }] }, auth);
    expect(submitted.status).toBeLessThan(300);
    await job.reached;
    const row = await page.waitForSelector('.tool-call-card li[data-status="running"] [data-progress="2/5 — indexing the diff"]', { timeout: 15_000 });
    expect(await row.textContent()).toContain('2/5 — indexing the diff');
    expect(await page.textContent('.tool-call-card')).toContain('slow_job');
    await page.screenshot({ path: path.join(ARTIFACTS, 'inspect-agents.png') });
    await page.screenshot({ path: '/tmp/inspector-agents.png' });
    job.open();

    // The call ended: its status is its result's, and its progress is gone.
    await answer.reached;
    await page.waitForSelector('.tool-call-card li[data-status="succeeded"]', { timeout: 15_000 });
    expect(await page.$('.tool-call-card .progress')).toBeNull();
    answer.open();
    await page.waitForSelector('.status-line [data-phase="completed"]', { timeout: 15_000 });
    expect(await page.$('.tool-call-card')).toBeNull();
    await page.close();
  }, 120_000);
});
