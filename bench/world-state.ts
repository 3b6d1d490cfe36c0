/**
 * `world_state_sample_us` and `world_state_reread_ratio`: what sampling the world state costs before
 * each model call (CW-2). The fixture: a workspace of 20 top-level entries with an `AGENTS.md`, and a
 * skills directory of 10 skills. One sample is `captureWorldState` of all four sections, as
 * `prepareRequest` runs it.
 *
 * - changed: samples while the fixture was just written (its change times within `SETTLE_MS`), so
 *   every listing and file is read again through the thread pool — what every sample cost before
 *   the reads were reused (issue 28), and what a sample costs right after a tool changed a file.
 * - settled: the same fixture once its change times are older than `SETTLE_MS`: each entry is one
 *   `lstat` or `stat` on the main thread, and the reads are reused.
 *
 * The ratio is changed ÷ settled, medians of one run. Waiting for the fixture to settle takes about 2 s.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { captureWorldState } from '../src/context/world-state/capture.js';
import type { WorldStateSources } from '../src/context/world-state/types.js';
import { SETTLE_MS } from '../src/util/settled-reads.js';
import { median } from './common.js';

export interface WorldStateBenchResult {
  /** Median µs of one sample of the settled fixture. */
  settledUs: number;
  /** Median µs of one sample while the fixture had just changed (every read made). */
  changedUs: number;
  ratio: number;
}

function fixture(): { root: string; sources: WorldStateSources } {
  const root = mkdtempSync(join(tmpdir(), 'turnchart-bench-world-'));
  const workspace = join(root, 'workspace');
  const skills = join(root, 'skills');
  mkdirSync(workspace);
  for (let i = 0; i < 10; i++) mkdirSync(join(workspace, `dir${i}`));
  for (let i = 0; i < 9; i++) writeFileSync(join(workspace, `file${i}.ts`), 'export {};\n');
  writeFileSync(join(workspace, 'AGENTS.md'), '# Rules\n\nRun the tests before you answer.\n');
  for (let i = 0; i < 10; i++) {
    mkdirSync(join(skills, `skill-${i}`), { recursive: true });
    writeFileSync(join(skills, `skill-${i}`, 'SKILL.md'), `---\ndescription: what skill ${i} is for\n---\nThe steps of skill ${i}.\n`);
  }
  return { root, sources: { workspaceDir: workspace, skills: { dir: skills }, permissionMode: 'auto' } };
}

async function samples(sources: WorldStateSources, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await captureWorldState(sources);
    out.push((performance.now() - started) * 1000);
  }
  return out;
}

export async function measureWorldState(count = 200): Promise<WorldStateBenchResult> {
  const madeAt = Date.now();
  const { root, sources } = fixture();
  try {
    const changed = await samples(sources, Math.min(count, 100));
    // Every changed sample must have run before the fixture settled, or some of them reused reads.
    if (Date.now() - madeAt >= SETTLE_MS) throw new Error('the changed samples outlasted the settling margin: take fewer');
    await sleep(Math.max(0, madeAt + SETTLE_MS + 200 - Date.now()));
    const settled = await samples(sources, count);
    const changedUs = median(changed);
    const settledUs = median(settled);
    return { settledUs, changedUs, ratio: changedUs / settledUs };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await measureWorldState();
  console.log(`world state sample: settled ${r.settledUs.toFixed(0)} µs, just changed ${r.changedUs.toFixed(0)} µs (medians)`);
  console.log(`world_state_sample_us: ${r.settledUs.toFixed(0)}`);
  console.log(`world_state_reread_ratio: ${r.ratio.toFixed(1)}`);
}
