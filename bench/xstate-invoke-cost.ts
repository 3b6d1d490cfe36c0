/**
 * Diagnostic, not part of `npm run bench`: what one invoked `fromPromise` effect costs in XState v5,
 * against the plain `await` a hand-written loop pays. A flat chart invokes `chain` trivial promise
 * actors one after another; the per-invoke time is the overhead each effect-as-actor adds to a step
 * (the turn and tool-call charts invoke ~8 of them per tool step). `npx tsx bench/xstate-invoke-cost.ts`
 */
import { createActor, fromPromise, setup, type AnyStateMachine } from 'xstate';
import { median } from './common.js';

const chain = Number(process.argv[2] ?? 8);
const runs = 2_000;
const noop = fromPromise<void, { n: number }>(async () => undefined);

function chainMachine(): AnyStateMachine {
  const states: Record<string, object> = {};
  for (let i = 0; i < chain; i++) {
    states[`s${i}`] = { invoke: { src: 'noop', input: () => ({ n: i }), onDone: i + 1 < chain ? `s${i + 1}` : 'done' } };
  }
  states.done = { type: 'final' };
  return setup({ actors: { noop } }).createMachine({ id: 'chain', initial: 's0', states });
}

function nestedMachine(): AnyStateMachine {
  // The same chain, one level of child machine deeper per invoke: like turn → toolCall → effect.
  const child = chainMachine();
  const states: Record<string, object> = {
    run: { invoke: { src: 'child', onDone: 'done' } },
    done: { type: 'final' },
  };
  return setup({ actors: { child } }).createMachine({ id: 'parent', initial: 'run', states });
}

async function runOnce(machine: AnyStateMachine): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const actor = createActor(machine);
    actor.subscribe({ complete: () => resolve(), error: reject });
    actor.start();
  });
}

async function plainOnce(): Promise<void> {
  for (let i = 0; i < chain; i++) await (async () => undefined)();
}

async function time(label: string, body: () => Promise<void>): Promise<number> {
  const samples: number[] = [];
  for (let rep = 0; rep < 7; rep++) {
    const started = performance.now();
    for (let i = 0; i < runs; i++) await body();
    samples.push(((performance.now() - started) * 1000) / (runs * chain));
  }
  const us = median(samples.slice(2));
  console.log(`${label.padEnd(44)} ${us.toFixed(2).padStart(7)} µs per effect`);
  return us;
}

const flat = chainMachine();
const nested = nestedMachine();
const plain = await time('plain await', plainOnce);
const x = await time('xstate invoke fromPromise (flat chart)', () => runOnce(flat));
await time('xstate invoke fromPromise (in a child machine)', () => runOnce(nested));
console.log(`→ each effect invoked as an actor costs ~${(x - plain).toFixed(1)} µs more than an await (tiny chart, no context)`);
