import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { dropPostgresSchema, POSTGRES_URL, sqliteFile } from '../../support/databases.js';
import { bundled } from '../../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Runs the embedder to its own end: resolves with its exit code and output; a process kept alive fails by the test's timeout. */
function runEmbedder(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = (embedder = spawn(process.execPath, [bundled('forgetful-embedder'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

let embedder: ChildProcess | undefined;
let drop: (() => Promise<void>) | undefined;
afterEach(async () => {
  // A child still alive failed the test by its timeout; it is not left running.
  if (embedder && embedder.exitCode === null && embedder.signalCode === null) embedder.kill('SIGKILL');
  embedder = undefined;
  await drop?.();
  drop = undefined;
});

describe('an embedding program that never calls shutdown() still exits', () => {
  it('on SQLite: the lease renewal and the trace window are no reason to stay alive', { timeout: 60_000 }, async () => {
    const file = sqliteFile();
    drop = file.drop;
    const { code, output } = await runEmbedder(['sqlite', file.file]);
    expect(output).toContain('TURN completed');
    expect(code).toBe(0);
  });

  it.skipIf(!POSTGRES_URL)('on PostgreSQL: idle pooled connections are no reason either', { timeout: 60_000 }, async () => {
    const schema = `tc_exit_${randomUUID().replaceAll('-', '')}`;
    drop = () => dropPostgresSchema(POSTGRES_URL!, schema);
    const { code, output } = await runEmbedder(['postgres', POSTGRES_URL!, schema]);
    expect(output).toContain('TURN completed');
    expect(code).toBe(0);
  });
});
