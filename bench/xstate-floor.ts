/**
 * `xstate_floor_ratio`: what XState itself costs for the event sequence of one model step, with
 * nothing of turnchart in it. Two charts reduced to that sequence — a turn that prepares, calls the
 * model, writes the response and invokes one child per tool call; a tool call that executes, writes
 * its result and ends — with every effect answered as the runtime's dispatcher answers it (it starts
 * a microtask after the transition, its promise settles, the reply is an event), no guards beyond
 * "any tool calls?", no actions but the replies, and a context of three fields. That is 5 effect
 * replies, one child actor's start, and its done event a step: the least the turn and tool-call
 * charts can cost while each call is a child actor (XS-1).
 *
 * The figure is (bare loop + these charts) ÷ bare loop, both on null storage in the same run, against
 * `orchestration_ratio`'s bar: the runtime does the bare loop's work plus at least this much.
 */
import { assign, createActor, setup, type AnyActorRef } from 'xstate';
import { median } from './common.js';
import { baselineSide } from './step-overhead.js';

interface FloorOptions {
  toolSteps: number;
  turnsPerRep: number;
  warmupReps: number;
  reps: number;
}

export interface FloorResult {
  /** µs per model step of the reduced charts alone. */
  chartsUs: number;
  /** µs per model step of the bare loop on null storage. */
  bareUs: number;
  /** (bare loop + charts) ÷ bare loop: the least `orchestration_ratio` could be. */
  ratio: number;
}

/** An effect's reply as the runtime's dispatcher makes it: started a microtask after the transition, answered when its promise settles. */
function reply(self: AnyActorRef, output: unknown): void {
  queueMicrotask(() => {
    void Promise.resolve(output).then((settled) => self.send({ type: 'effect.done', output: settled }));
  });
}

interface Call {
  id: string;
  name: string;
  argumentsText: string;
}

const toolCall = setup({ types: { context: {} as { call: Call; result: unknown }, input: {} as { call: Call } } }).createMachine({
  context: ({ input }) => ({ call: input.call, result: null }),
  initial: 'executing',
  states: {
    executing: {
      entry: ({ self }) => reply(self, { status: 'succeeded', content: 'ok' }),
      on: { 'effect.done': { target: 'writing_result', actions: assign({ result: ({ event }) => (event as { output?: unknown }).output }) } },
    },
    writing_result: { entry: ({ self }) => reply(self, undefined), on: { 'effect.done': 'done' } },
    done: { type: 'final' },
  },
  output: ({ context }) => ({ result: context.result }),
});

function turnChart(toolSteps: number) {
  type Ctx = { call: number; calls: Call[] };
  return setup({ types: { context: {} as Ctx }, actors: { toolCall } }).createMachine({
    context: { call: 1, calls: [] },
    initial: 'preparing',
    states: {
      preparing: { entry: ({ self }) => reply(self, { overLine: false }), on: { 'effect.done': 'calling' } },
      calling: {
        entry: ({ self, context }) =>
          reply(self, context.call <= toolSteps ? [{ id: `c${context.call}`, name: 'read', argumentsText: `{"path":"f${context.call}"}` }] : []),
        on: {
          'effect.done': {
            target: 'writing_response',
            actions: assign(({ context, event }) => ({ calls: (event as { output?: Call[] }).output ?? [], call: context.call + 1 })),
          },
        },
      },
      writing_response: {
        entry: ({ self }) => reply(self, undefined),
        on: { 'effect.done': [{ guard: ({ context }) => context.calls.length === 0, target: 'completed' }, { target: 'tool_call' }] },
      },
      tool_call: { invoke: { src: 'toolCall', input: ({ context }) => ({ call: context.calls[0]! }), onDone: 'preparing' } },
      completed: { type: 'final' },
    },
  });
}

async function chartsRep(machine: ReturnType<typeof turnChart>, turns: number, steps: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < turns; i++) {
    await new Promise<void>((resolve, reject) => {
      const actor = createActor(machine);
      actor.subscribe({ complete: resolve, error: reject });
      actor.start();
    });
  }
  return ((performance.now() - started) * 1000) / (turns * steps);
}

export async function measureXstateFloor(options: FloorOptions): Promise<FloorResult> {
  const steps = options.toolSteps + 1;
  const machine = turnChart(options.toolSteps);
  const bare = baselineSide(options.toolSteps, true, 'null');
  const charts: number[] = [];
  const bares: number[] = [];
  for (let i = 0; i < options.warmupReps + options.reps; i++) {
    const c = await chartsRep(machine, options.turnsPerRep, steps);
    const b = (await bare.rep(options.turnsPerRep)).usPerStep;
    if (i < options.warmupReps) continue;
    charts.push(c);
    bares.push(b);
  }
  const chartsUs = median(charts);
  const bareUs = median(bares);
  return { chartsUs, bareUs, ratio: (bareUs + chartsUs) / bareUs };
}
