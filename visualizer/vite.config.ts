import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The inspector page: built into dist/visualizer, which the host serves at /inspect. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/inspect/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/visualizer', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // ELK (about 1.5 MB) is a chunk of its own, fetched only when a chart is folded (chart-relayout.ts).
    chunkSizeWarningLimit: 1600,
  },
});
