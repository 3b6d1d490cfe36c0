import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startHost, type RunningHost } from '../../src/host/host.js';
import { defineTool, scriptedModel, type ScriptedStep } from '../../src/index.js';
import { buildInspectorPage, launchBrowser, type Browser } from '../support/browser.js';
import { call } from '../support/host.js';
import { until } from '../support/poll.js';

/** Issue 28, item 6: where the screenshots go, to look at (ignored by git). */
const SHOTS = path.resolve('.turnchart/inspect-readable');
const MIN_LABEL_PX = 11;

let browser: Browser | { unavailable: string };
let assets: string;
let host: RunningHost | undefined;
let dir: string;

beforeAll(async () => {
  browser = await launchBrowser();
  if ('unavailable' in browser) {
    console.log(`readable chart test skipped: ${browser.unavailable}`);
    return;
  }
  assets = await buildInspectorPage();
  await mkdir(SHOTS, { recursive: true });
}, 120_000);
afterAll(async () => {
  await host?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (!('unavailable' in browser)) await browser.close();
  if (assets) await rm(assets, { recursive: true, force: true });
});

interface Label {
  text: string;
  height: number;
  /** Computed font size × the SVG's current scale. */
  px: number;
}

/** The labels of a chart that are in its panel's view, with their rendered size. */
function visibleLabels(page: Page, machine: string): Promise<Label[]> {
  return page.$eval(`#chart-${machine} svg.chart`, (el) => {
    const view = el.getBoundingClientRect();
    // CSS pixels per chart unit, as the browser draws the SVG now.
    const scale = (el as unknown as { getScreenCTM(): { a: number } }).getScreenCTM().a;
    const style = (t: typeof el) => el.ownerDocument.defaultView!.getComputedStyle(t);
    return [...el.querySelectorAll('text')]
      .map((t) => ({ t, r: t.getBoundingClientRect() }))
      .filter(({ r }) => r.width > 0 && r.right > view.left && r.left < view.right && r.bottom > view.top && r.top < view.bottom)
      .map(({ t, r }) => ({ text: t.textContent ?? '', height: r.height, px: parseFloat(style(t).fontSize) * scale }));
  });
}

/** The state boxes of a chart lying outside its panel's view. */
function statesOutside(page: Page, machine: string, selector = '[data-state]'): Promise<string[]> {
  return page.$eval(
    `#chart-${machine} svg.chart`,
    (el, sel) => {
      const view = el.getBoundingClientRect();
      return [...el.querySelectorAll(sel)]
        .filter((g) => {
          const r = g.querySelector('rect')!.getBoundingClientRect();
          return r.left < view.left - 0.5 || r.top < view.top - 0.5 || r.right > view.right + 0.5 || r.bottom > view.bottom + 0.5;
        })
        .map((g) => g.getAttribute('data-state')!);
    },
    selector,
  );
}

/** The compound states drawn open though they hold no active state. */
function openWithoutActive(page: Page, machine: string): Promise<string[]> {
  return page.$$eval(`#chart-${machine} .state.compound:not(.root):not([data-active]):not([data-collapsed]), #chart-${machine} .state.parallel:not(.root):not([data-active]):not([data-collapsed])`, (els) =>
    els.map((e) => e.getAttribute('data-state')!),
  );
}

async function settled(page: Page, machine: string): Promise<void> {
  await until(`the ${machine} chart to be laid out`, async () => (await page.getAttribute(`#chart-${machine}`, 'data-layout')) !== 'pending');
}

/** Every label in view is at least 11 px; `least` labels are in view (a region of the chart, not a corner of it). */
async function expectReadable(page: Page, machine: string, least = 6): Promise<void> {
  const labels = await visibleLabels(page, machine);
  expect(labels.length).toBeGreaterThanOrEqual(least);
  const small = labels.filter((l) => l.height < MIN_LABEL_PX || l.px < MIN_LABEL_PX - 0.01);
  expect(small, `labels under ${MIN_LABEL_PX} px`).toEqual([]);
}

describe('the inspector draws a chart readably (issue 28, item 6)', () => {
  it('follows the tool call waiting for an approval at a readable scale, folds what holds no active state, writes long guard lists as badges, and fits on demand', async (ctx) => {
    if ('unavailable' in browser) return ctx.skip();
    const publish = defineTool({
      name: 'publish_note',
      description: 'Publish a note (asks first)',
      effect: 'write',
      input: z.object({ path: z.string(), text: z.string() }),
      authorize: async (args) => ({ decision: 'ask', paths: [args.path] }),
      execute: async () => ({ status: 'succeeded', content: 'published' }),
    });
    const steps: ScriptedStep[] = [{ text: 'Publishing.', toolCalls: [{ name: 'publish_note', args: { path: 'notes/build.md', text: 'green' } }] }, { text: 'Done.' }];
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-readable-'));
    host = await startHost({ host: '127.0.0.1', port: 0, db: path.join(dir, 'db.sqlite'), workspace: dir, model: scriptedModel(steps), idleTtlSeconds: 300, token: 'chart-token', inspectorAssets: assets, runtime: { tools: [publish] }, warn: () => undefined });
    const auth = { authorization: 'Bearer chart-token' };
    const sessionId = (await call(host.url, 'POST', '/sessions', { permissionMode: 'ask' }, auth)).body.sessionId as string;
    await call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'Publish a note' }] }, auth);

    const page = await (browser as Browser).context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(`${host.url}/inspect?token=chart-token`);
    // No session selected: the session chart shows its initial states' region, as readable.
    await page.waitForSelector('#chart-session svg.chart [data-state]', { state: 'attached' });
    await settled(page, 'session');
    await expectReadable(page, 'session');
    const initial = await page.$$eval('#chart-session .state:not(.root) > circle.initial', (els) => els.map((e) => e.parentElement!.getAttribute('data-state')!));
    expect(initial.length).toBeGreaterThan(0);
    expect(await statesOutside(page, 'session', `[data-state="${initial[0]}"]`)).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'no-session.png') });
    await page.click(`[data-session="${sessionId}"]`);
    await page.waitForSelector('.approval', { timeout: 15_000 });
    await page.click('[data-tab="toolCall"]');
    const active = await page.waitForSelector('#chart-toolCall [data-state^="toolCall.active.waiting_permission."][data-active="true"]', { state: 'attached', timeout: 15_000 });
    const leaf = (await active.getAttribute('data-state'))!;
    await settled(page, 'toolCall');
    await page.locator('#chart-toolCall').scrollIntoViewIfNeeded();

    // The default view: the active region, every label in it at 11 px or more.
    expect(await page.getAttribute('#chart-toolCall', 'data-view')).toBe('follow');
    await expectReadable(page, 'toolCall');
    expect(await statesOutside(page, 'toolCall', `[data-state="${leaf}"]`)).toEqual([]);
    expect(await openWithoutActive(page, 'toolCall')).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'tool-call-readable.png') });

    // Long guard lists are badges; the longest, reached from the keyboard, is brought into view and shows its full list; so does hovering it.
    const badges = await page.$$eval('#chart-toolCall .guard-badge', (els) => els.map((e) => ({ id: e.getAttribute('data-badge')!, label: e.getAttribute('aria-label')! })));
    expect(badges.length).toBeGreaterThan(0);
    const longest = badges.sort((a, b) => b.label.length - a.label.length)[0]!;
    const full = longest.label.split(': ').slice(1).join(': ').split('; ');
    expect(full.length).toBeGreaterThan(2);
    const badge = page.locator(`#chart-toolCall .guard-badge[data-badge="${longest.id}"]`);
    const tip = page.locator('#chart-toolCall .guard-tip');
    await badge.focus();
    await tip.waitFor({ state: 'visible' });
    expect(await tip.locator('li').allTextContents()).toEqual(full);
    expect(await page.$eval(`#chart-toolCall .guard-badge[data-badge="${longest.id}"]`, (e) => {
      const r = e.getBoundingClientRect();
      const view = e.closest('svg')!.getBoundingClientRect();
      return r.left >= view.left && r.top >= view.top && r.right <= view.right && r.bottom <= view.bottom;
    })).toBe(true);
    await badge.blur();
    await tip.waitFor({ state: 'hidden' });
    await badge.hover();
    await tip.waitFor({ state: 'visible' });
    expect(await tip.locator('li').allTextContents()).toEqual(full);
    await page.screenshot({ path: path.join(SHOTS, 'tool-call-badge-hover.png') });
    await page.mouse.move(5, 5);
    await tip.waitFor({ state: 'hidden' });
    // Still at the readable scale, around the badge brought into view (which may sit by a sparse part of the chart: at least the badge's own label).
    await expectReadable(page, 'toolCall', 1);
    // "follow" goes back to the active state.
    await page.click('#chart-toolCall [data-action="follow"]');
    expect(await page.getAttribute('#chart-toolCall', 'data-view')).toBe('follow');
    expect(await statesOutside(page, 'toolCall', `[data-state="${leaf}"]`)).toEqual([]);

    // "fit": the whole chart, every state inside the panel; again: back to the readable view.
    await page.click('#chart-toolCall [data-action="fit"]');
    expect(await page.getAttribute('#chart-toolCall', 'data-view')).toBe('fit');
    expect(await statesOutside(page, 'toolCall')).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'tool-call-fit.png') });
    await page.click('#chart-toolCall [data-action="fit"]');
    expect(await page.getAttribute('#chart-toolCall', 'data-view')).toBe('follow');
    await expectReadable(page, 'toolCall');
    expect(await statesOutside(page, 'toolCall', `[data-state="${leaf}"]`)).toEqual([]);

    // The turn chart: `running_model`, which the turn is not in, is one box that opens on a click.
    await page.click('[data-tab="turn"]');
    await page.waitForSelector('#chart-turn [data-state="turn.running_tools.tool_call"][data-active="true"]', { state: 'attached' });
    await settled(page, 'turn');
    expect(await openWithoutActive(page, 'turn')).toEqual([]);
    const folded = page.locator('#chart-turn [data-state="turn.running_model"][data-collapsed="true"]');
    expect(await folded.textContent()).toMatch(/\+\d+ states/);
    await expectReadable(page, 'turn');
    await page.screenshot({ path: path.join(SHOTS, 'turn-readable.png') });
    await page.click('#chart-turn [data-action="fit"]');
    await folded.click();
    await page.waitForSelector('#chart-turn [data-state="turn.running_model.calling"]', { state: 'attached', timeout: 15_000 });
    expect(await page.$('#chart-turn [data-state="turn.running_model"][data-collapsed]')).toBeNull();
    await page.click('#chart-turn [data-fold="turn.running_model"]');
    await page.waitForSelector('#chart-turn [data-state="turn.running_model"][data-collapsed="true"]', { state: 'attached', timeout: 15_000 });
    await page.close();
  }, 120_000);
});
