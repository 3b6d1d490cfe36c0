import { createEmptyActor, type ActorLogic, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type Snapshot } from 'xstate';
import { getAdjacencyMap, type AdjacencyMap } from 'xstate/graph';

/**
 * A chart paired with a model of its surroundings: what the runtime, the tools and the user can
 * still do next (a tool call that already asked for approval cannot ask again, a conversation made
 * too big stays too big). The traversal walks the real chart definition; the environment only
 * decides which events are possible, so every generated path is one the runtime can produce.
 */
export interface ModelState<Env> {
  machine: AnyMachineSnapshot;
  env: Env;
}

export interface ChartModel<Env> {
  machine: AnyStateMachine;
  input: unknown;
  env: Env;
  /** The events the surroundings can produce in this state. */
  events(state: ModelState<Env>): EventObject[];
  /** The environment after `event` took the chart from `before` to `after`. */
  nextEnv(env: Env, event: EventObject, before: AnyMachineSnapshot, after: AnyMachineSnapshot): Env;
  /** A bounded key: two states with the same key behave the same from here on. */
  key(state: ModelState<Env>): string;
  /** Where a path may end; by default, where the chart is done. */
  isEnd?(state: ModelState<Env>): boolean;
}

/**
 * One step of a path: the chart rests in `state`; `event` happens; it rests in `next`. Each step
 * is one edge of the graph as it was explored: `event` is one the model offered in `state`, and
 * `next` is what the chart made of it there. Consecutive steps share a key, not necessarily a
 * snapshot (the graph keeps one snapshot per key).
 */
export interface PathStep<Env> {
  state: ModelState<Env>;
  event: EventObject;
  next: ModelState<Env>;
}

/** What the traversal walks: the chart's snapshot and the environment, as one snapshot. */
type Walked<Env> = Snapshot<undefined> & ModelState<Env>;
type Logic<Env> = ActorLogic<Walked<Env>, EventObject>;

/** The traversal's mock scope, given a parent so a child chart's `sendParent` has somewhere to go. */
function withParent(scope: unknown): never {
  const s = scope as { self: object };
  return { ...s, self: Object.assign(Object.create(s.self) as object, { _parent: createEmptyActor() }) } as never;
}

function logicOf<Env>(model: ChartModel<Env>): Logic<Env> {
  const { machine } = model;
  return {
    config: machine.config,
    transition: (state, event, scope) => {
      const after = machine.transition(state.machine, event, withParent(scope)) as AnyMachineSnapshot;
      return walked(after, model.nextEnv(state.env, event, state.machine, after));
    },
    getInitialSnapshot: (scope) => walked(machine.getInitialSnapshot(withParent(scope), model.input) as AnyMachineSnapshot, model.env),
    getPersistedSnapshot: (s) => s,
  };
}

function walked<Env>(machine: AnyMachineSnapshot, env: Env): Walked<Env> {
  return { status: 'active', output: undefined, error: undefined, machine, env };
}

function options<Env>(model: ChartModel<Env>) {
  return {
    serializeState: (s: Walked<Env>) => model.key(s),
    events: (s: Walked<Env>) => (s.machine.status === 'active' ? model.events(s).filter((e) => s.machine.can(e)) : []),
  };
}

/**
 * Paths that together take every edge of the chart-and-environment graph: for each edge not yet
 * on an earlier path, the shortest path to its source, the edge, and the shortest way from there
 * to an end (a final state, or the model's `isEnd`). Each path ends there. Wherever a path rests,
 * it also takes the edges that leave the chart where it is (a command refused, say) and that no
 * earlier path took, so those do not each need a path of their own.
 */
export function edgeTour<Env>(model: ChartModel<Env>): PathStep<Env>[][] {
  const adjacency: Adjacency<Env> = getAdjacencyMap(logicOf(model), options(model));
  const prefixOf = shortestFromStart(adjacency, model);
  const toFinal = shortestToFinal(adjacency, model);
  const walk = walker(model, selfLoops(adjacency, model));
  const tours: PathStep<Env>[][] = [];
  for (const [from, { state, transitions }] of Object.entries(adjacency)) {
    for (const [, { event, state: next }] of edgesOf<Env>(transitions)) {
      const edge = { state, event, next };
      if (walk.taken(edge)) continue;
      const prefix = prefixOf(from);
      const suffix = toFinal(next);
      if (prefix && suffix) tours.push(walk.path([...prefix, edge, ...suffix]));
    }
  }
  return tours;
}

/** Remembers the edges paths took; a path takes, before each of its steps, the loops there no path took yet. */
function walker<Env>(model: ChartModel<Env>, loopsAt: (key: string) => PathStep<Env>[]) {
  const walked = new Set<string>();
  const edgeKey = (step: PathStep<Env>) => `${model.key(step.state)} ${JSON.stringify(step.event)}`;
  return {
    taken: (step: PathStep<Env>) => walked.has(edgeKey(step)),
    path(steps: PathStep<Env>[]): PathStep<Env>[] {
      const path: PathStep<Env>[] = [];
      const take = (step: PathStep<Env>) => {
        path.push(step);
        walked.add(edgeKey(step));
      };
      for (const step of steps) {
        for (const loop of loopsAt(model.key(step.state))) if (!walked.has(edgeKey(loop)) && edgeKey(loop) !== edgeKey(step)) take(loop);
        take(step);
      }
      return path;
    },
  };
}

/** Per state, the edges that leave its key as it was. */
function selfLoops<Env>(adjacency: Adjacency<Env>, model: ChartModel<Env>) {
  const loops = new Map<string, PathStep<Env>[]>();
  for (const [from, { state, transitions }] of Object.entries(adjacency)) {
    const here = edgesOf<Env>(transitions).filter(([, edge]) => model.key(edge.state) === from);
    loops.set(from, here.map(([, { event, state: next }]) => ({ state, event, next })));
  }
  return (key: string) => loops.get(key) ?? [];
}

type Adjacency<Env> = AdjacencyMap<Walked<Env>, EventObject>;

type Edge<Env> = { event: EventObject; state: Walked<Env> };

function edgesOf<Env>(transitions: object): Array<[string, Edge<Env>]> {
  return Object.entries(transitions) as Array<[string, Edge<Env>]>;
}

/**
 * For each state, the shortest steps to it from the start (a breadth-first search over the explored
 * edges; the start is the first state explored). Built from the edges themselves, so every step's
 * `next` is what its event made of its `state`.
 */
function shortestFromStart<Env>(adjacency: Adjacency<Env>, model: ChartModel<Env>) {
  const nodes = new Map(Object.entries(adjacency));
  const [start] = nodes.keys();
  const lastHop = new Map<string, PathStep<Env> | null>([[start!, null]]);
  const queue = [start!];
  while (queue.length > 0) {
    const { state, transitions } = nodes.get(queue.shift()!)!;
    for (const [, { event, state: next }] of edgesOf<Env>(transitions)) {
      const to = model.key(next);
      if (lastHop.has(to)) continue;
      lastHop.set(to, { state, event, next });
      queue.push(to);
    }
  }
  return (key: string): PathStep<Env>[] | null => {
    if (!lastHop.has(key)) return null;
    const steps: PathStep<Env>[] = [];
    for (let hop = lastHop.get(key); hop; hop = lastHop.get(model.key(hop.state))) steps.unshift(hop);
    return steps;
  };
}

/** For each state, the shortest steps to a final state (a breadth-first search backwards). */
function shortestToFinal<Env>(adjacency: Adjacency<Env>, model: ChartModel<Env>) {
  const nextHop = new Map<string, PathStep<Env> | null>();
  const incoming = new Map<string, Array<{ from: string; step: PathStep<Env> }>>();
  for (const [from, { state, transitions }] of Object.entries(adjacency)) {
    if (model.isEnd ? model.isEnd(state) : state.machine.status === 'done') nextHop.set(from, null);
    for (const [, { event, state: next }] of edgesOf<Env>(transitions)) {
      const to = model.key(next);
      incoming.set(to, [...(incoming.get(to) ?? []), { from, step: { state, event, next } }]);
    }
  }
  const queue = [...nextHop.keys()];
  while (queue.length > 0) {
    const to = queue.shift()!;
    for (const { from, step } of incoming.get(to) ?? []) {
      if (nextHop.has(from)) continue;
      nextHop.set(from, step);
      queue.push(from);
    }
  }
  return (state: ModelState<Env>): PathStep<Env>[] | null => {
    const steps: PathStep<Env>[] = [];
    let key = model.key(state);
    while (nextHop.has(key)) {
      const step = nextHop.get(key);
      if (!step) return steps;
      steps.push(step);
      key = model.key(step.next);
    }
    return null;
  };
}
