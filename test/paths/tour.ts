import { createEmptyActor, type ActorLogic, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type Snapshot } from 'xstate';
import { getAdjacencyMap, getShortestPaths, type AdjacencyMap } from 'xstate/graph';

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

/** One step of a path: the chart rests in `state`; `event` happens; it rests in `next`. */
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
 * on an earlier path, the shortest path to its source (`getShortestPaths`), the edge, and the
 * shortest way from there to an end (a final state, or the model's `isEnd`). Each path ends there.
 */
export function edgeTour<Env>(model: ChartModel<Env>): PathStep<Env>[][] {
  const logic = logicOf(model);
  const opts = options(model);
  const adjacency: Adjacency<Env> = getAdjacencyMap(logic, opts);
  const prefixes = new Map<string, PathStep<Env>[]>();
  for (const path of getShortestPaths(logic, opts)) {
    const steps = path.steps.slice(1).map((step, i) => ({ state: path.steps[i]!.state, event: step.event, next: step.state }));
    prefixes.set(model.key(path.state), steps);
  }
  const toFinal = shortestToFinal(adjacency, model);
  const walked = new Set<string>();
  const tours: PathStep<Env>[][] = [];
  for (const [from, { state, transitions }] of Object.entries(adjacency)) {
    for (const [eventKey, { event, state: next }] of edgesOf<Env>(transitions)) {
      if (walked.has(`${from} ${eventKey}`)) continue;
      const prefix = prefixes.get(from);
      const suffix = toFinal(next);
      if (!prefix || !suffix) continue;
      const path = [...prefix, { state, event, next }, ...suffix];
      for (const step of path) walked.add(`${model.key(step.state)} ${JSON.stringify(step.event)}`);
      tours.push(path);
    }
  }
  return tours;
}

type Adjacency<Env> = AdjacencyMap<Walked<Env>, EventObject>;

type Edge<Env> = { event: EventObject; state: Walked<Env> };

function edgesOf<Env>(transitions: object): Array<[string, Edge<Env>]> {
  return Object.entries(transitions) as Array<[string, Edge<Env>]>;
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
