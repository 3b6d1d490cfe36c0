import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium: the tests never download a browser. */
export const CHROMIUM = '/usr/bin/chromium';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const ARTIFACTS = path.resolve('test/artifacts');

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Headless chromium on a fresh profile; the reason it cannot start otherwise. */
export async function launchBrowser(): Promise<Browser | { unavailable: string }> {
  if (!existsSync(CHROMIUM)) return { unavailable: `${CHROMIUM} is missing (apt-get install -y chromium)` };
  const profile = await mkdtemp(path.join(os.tmpdir(), 'turnchart-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1600, height: 1000 },
    });
    await mkdir(ARTIFACTS, { recursive: true });
    return {
      context,
      close: async () => {
        await context.close();
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    return { unavailable: `chromium could not be launched: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` };
  }
}

/** Builds the inspector page from the current source into a fresh directory (what `npm ci` builds into dist/visualizer). */
export async function buildInspectorPage(): Promise<string> {
  const outDir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-visualizer-'));
  await promisify(execFile)(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--config', 'visualizer/vite.config.ts', '--outDir', outDir, '--emptyOutDir'], { cwd: path.resolve('.') });
  return outDir;
}
