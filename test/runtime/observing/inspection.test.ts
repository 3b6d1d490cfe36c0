import type { InspectionEvent } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, runTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

describe('inspection (XS-6)', () => {
  it('reports every actor of the session tree to the inspect observer', async () => {
    const events: InspectionEvent[] = [];
    h = await harness([{ text: 'x', toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }, { text: 'done' }], {
      inspect: (e) => events.push(e),
    });
    await runTurn(h.session, 'go');
    const machineIds = new Set(
      events.flatMap((e) => (e.type === '@xstate.actor' ? [(e.actorRef.getSnapshot() as { machine?: { id: string } }).machine?.id] : [])),
    );
    // The turn's no-progress watchdog (issue 12) is an actor of the tree too, off for this agent.
    expect(machineIds).toEqual(new Set(['session', 'turn', 'stallWatchdog', 'toolCall', undefined]));
    const turnStates = events.flatMap((e) =>
      e.type === '@xstate.snapshot' && (e.snapshot as { machine?: { id: string } }).machine?.id === 'turn'
        ? [JSON.stringify((e.snapshot as unknown as { value: unknown }).value)]
        : [],
    );
    expect(turnStates).toContain('{"running_model":"calling"}');
    expect(turnStates).toContain('{"running_tools":{"tool_call":"executing"}}');
    expect(turnStates.at(-1)).toBe('"completed"');
  });
});
