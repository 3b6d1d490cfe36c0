import { createActor, createMachine, type AnyActorRef, type InspectionEvent, type StateValue } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { activeStateIds, actorInfo, stateParts, takenTransition, type SnapshotLike } from '../../src/inspect/actor-state.js';
import { InspectHub } from '../../src/inspect/inspect-hub.js';
import { changeJson, knownActor, stateJson, transitionsJson } from '../../src/inspect/message-json.js';
import type { ActorChange, ActorInfo, ActorState } from '../../src/inspect/stream-protocol.js';
import { harness, readFileTool, type Harness } from '../support/harness.js';
import { until } from '../support/poll.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const info: ActorInfo = { actorId: 'x:"1"', parentId: null, name: 'm\u2028', machineId: 'm' };

describe('the stream\'s messages written by hand', () => {
  it('writes a change and a whole state as JSON.stringify writes the object', () => {
    const changes: ActorChange[] = [
      {},
      { status: 'done' },
      { states: ['m', 'm."quoted"', 'm.\u00e9t\u00e9'] },
      { status: 'active', states: ['m'], children: { toolCall: 'x:4', '0': 'x:5' } },
      { states: ['m'], set: { a: 1, 'we"ird': 'line\nbreak', nested: { list: [1, null, 'x'] } }, unset: ['gone', 'also"gone'] },
      { unset: ['only'] },
      { set: { skipped: undefined, kept: true } },
      { children: {}, context: { whole: ['context'] } },
      { context: null },
      { status: 'stopped', context: undefined },
      { context: undefined },
    ];
    for (const change of changes) expect(changeJson(change), JSON.stringify(change)).toBe(JSON.stringify(change));
    const states: ActorState[] = [
      { actor: info, status: 'active', states: ['m', 'm.a'], children: { c: 'x:2' }, context: { a: 'é', b: [1, 2], c: null } },
      { actor: info, status: 'done', states: [], children: {}, context: undefined },
      { actor: info, status: 'active', states: ['m'], children: {}, context: 'a string' },
    ];
    for (const state of states) expect(stateJson(knownActor(info), state)).toBe(JSON.stringify(state));
  });

  it('writes the transitions of a microstep as takenTransition gives them, from the chart\'s own definitions', () => {
    const machine = createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: { always: 'c' }, c: { on: { GO: { target: 'a' }, STAY: {} } } },
    });
    const steps: (readonly unknown[])[] = [];
    const actor = createActor(machine, {
      inspect: (event: InspectionEvent) => {
        if (event.type === '@xstate.microstep') steps.push(event._transitions);
      },
    });
    actor.start();
    for (const type of ['GO', 'STAY', 'GO', 'GO', 'STAY']) actor.send({ type });
    actor.stop();
    expect(steps.length).toBeGreaterThan(4);
    const expected = JSON.stringify(steps.flatMap((transitions) => transitions.map(takenTransition)));
    // Twice: the second time every definition's JSON is the one written the first time.
    expect(transitionsJson(steps)).toBe(expected);
    expect(transitionsJson(steps)).toBe(expected);
    expect(transitionsJson(undefined)).toBe('[]');
    expect(transitionsJson([[{ source: { id: 'm.x' } }, 'not an object']])).toBe(JSON.stringify([takenTransition({ source: { id: 'm.x' } }), takenTransition('not an object')]));
  });

  it('gives the state ids of a configuration met again, parallel regions included, as spelled from its value', () => {
    const machine = createMachine({
      id: 'p',
      type: 'parallel',
      states: {
        left: { initial: 'one', states: { one: { on: { L: 'two' } }, two: { on: { L: 'one' } } } },
        right: { initial: 'x', states: { x: { on: { R: 'y' } }, y: { initial: 'deep', states: { deep: { on: { R: '#p.right.x' } } } } } },
      },
    });
    const actor = createActor(machine).start();
    const ref = actor as unknown as AnyActorRef;
    for (const type of ['L', 'R', 'L', 'R', 'L', 'R', 'R', 'L']) {
      actor.send({ type });
      const snapshot = actor.getSnapshot() as unknown as SnapshotLike;
      expect(stateParts(actorInfo(ref), snapshot).states).toEqual(activeStateIds('p', snapshot.value as StateValue));
    }
    actor.stop();
  });

  it('sends, for a real turn, messages that are exactly what JSON.stringify writes of what they say', async () => {
    h = await harness([{ toolCalls: [{ name: 'read_file', args: { path: 'a.txt', apiKey: 'sk-not-sent' } }] }, { text: 'done' }], { tools: [readFileTool()], permissionMode: 'auto' });
    const json: string[] = [];
    new InspectHub().watch(h.session).listen({ item: (sent) => json.push(sent.json), end: () => undefined }, null);
    const turn = await h.session.startTurn({ clientRequestId: 'r1', input: [{ type: 'text', text: 'read' }] });
    if (!turn.ok) throw new Error('refused');
    await h.session.waitForTurn(turn.turnId);
    await until('the last step is sent', () => json.some((j) => j.includes('"turn_finished"')));
    const kinds = new Set<string>();
    for (const message of json) {
      const parsed = JSON.parse(message) as { kind: string };
      kinds.add(parsed.kind);
      expect(JSON.stringify(parsed)).toBe(message);
    }
    expect(kinds).toEqual(new Set(['actor', 'event', 'snapshot', 'delta', 'update']));
    expect(json.join('\n')).not.toContain('sk-not-sent');
  });
});
