import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

describe('README', () => {
  it('shows the quick-start example exactly as examples/quickstart.ts, which runs as written', async () => {
    const [readme, example] = await Promise.all([readFile('README.md', 'utf8'), readFile('examples/quickstart.ts', 'utf8')]);
    expect(readme).toContain('```ts\n' + example + '```');
    const { outcome } = (await import('../examples/quickstart.js')) as { outcome: unknown };
    expect(outcome).toEqual({ status: 'completed', finalText: 'a.txt says hello' });
  });

  it('opens with the two commands', async () => {
    const readme = await readFile('README.md', 'utf8');
    const head = readme.split('\n').slice(0, 15).join('\n');
    expect(head).toContain('npm ci && npm start');
    expect(head).toContain('npm test');
  });
});
