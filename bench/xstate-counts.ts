/**
 * Diagnostic, not part of `npm run bench`: counts what XState does per model step of the
 * step-overhead turn (actors created, events processed, snapshots produced, actions run),
 * using the runtime's `inspect` option. `npx tsx bench/xstate-counts.ts`
 */
import type { InspectionEvent } from 'xstate';
import { createRuntime, sqliteStorage } from '../src/index.js';
import { readTool, stepModel } from './common.js';

const toolSteps = 10;
const turns = 5;
const counts = new Map<string, number>();
const actorsBySrc = new Map<string, number>();
const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
let counting = false;

const inspect = (event: InspectionEvent) => {
  if (!counting) return;
  bump(counts, event.type);
  if (event.type === '@xstate.actor') {
    const src = (event.actorRef as unknown as { src?: unknown }).src;
    bump(actorsBySrc, typeof src === 'string' ? src : ((src as { id?: string } | undefined)?.id ?? '(logic)'));
  }
  if (event.type === '@xstate.event') bump(counts, `event ${event.event.type.replace(/\.[0-9a-f-]{20,}.*/, '.*')}`);
};

const runtime = await createRuntime({
  storage: sqliteStorage({ filename: ':memory:' }),
  model: stepModel(toolSteps),
  tools: [readTool()],
  agents: { default: { maxModelCalls: 50 } },
  inspect,
});
for (let i = 0; i < turns; i++) {
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
  counting = true;
  const turn = await session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'go' }] });
  if (!turn.ok) throw new Error('refused');
  await session.waitForTurn(turn.turnId);
  counting = false;
}
await runtime.shutdown();
const steps = turns * (toolSteps + 1);
console.log(`per model step (${steps} steps, ${toolSteps} of ${toolSteps + 1} with a tool call):`);
for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / steps).toFixed(2).padStart(6)}  ${key}`);
console.log('actors created per step, by src:');
for (const [key, n] of [...actorsBySrc].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / steps).toFixed(2).padStart(6)}  ${key}`);
