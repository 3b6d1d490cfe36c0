import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where `vite build` puts the inspector page: `dist/visualizer` at the package root, found by
 * walking up from this file (it runs from `src/host/` under tsx and from `dist/src/host/` once built).
 */
export function defaultInspectorAssets(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i += 1) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'turnchart') return join(dir, 'dist', 'visualizer');
    dir = dirname(dir);
  }
  return resolve('dist', 'visualizer');
}
