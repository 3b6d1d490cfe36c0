import type { AnyStateMachine, InspectionEvent } from 'xstate';

/**
 * The transitions of a chart, read from its definition: one per (source state, event, branch).
 * A branch is the position in the source's list for that event, so each guarded alternative
 * counts on its own. Eventless (`always`) transitions use the event name `always`.
 */
export interface ChartTransition {
  key: string;
  source: string;
  event: string;
  branch: number;
  /** Where it goes (`-` for a targetless transition that only runs actions). */
  target: string;
  guard: string;
}

interface TransitionLike {
  source: StateNodeLike;
  eventType: string;
  target?: readonly { id: string }[];
  guard?: unknown;
}

interface StateNodeLike {
  id: string;
  states: Record<string, StateNodeLike>;
  transitions: Map<string, TransitionLike[]>;
  always?: TransitionLike[];
}

export function transitionKey(source: string, event: string, branch: number): string {
  return `${source} ${event}#${branch}`;
}

/** Every transition of the machine's definition, in document order. */
export function chartTransitions(machine: AnyStateMachine): ChartTransition[] {
  const out: ChartTransition[] = [];
  const visit = (node: StateNodeLike) => {
    for (const [event, list] of node.transitions) list.forEach((t, i) => out.push(describe(node.id, event, i, t)));
    (node.always ?? []).forEach((t, i) => out.push(describe(node.id, 'always', i, t)));
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root as unknown as StateNodeLike);
  return out;
}

function describe(source: string, event: string, branch: number, t: TransitionLike): ChartTransition {
  return {
    key: transitionKey(source, event, branch),
    source,
    event,
    branch,
    target: t.target?.map((n) => n.id).join(',') ?? '-',
    guard: guardName(t.guard),
  };
}

function guardName(guard: unknown): string {
  if (guard === undefined) return '';
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String((guard as { type: unknown }).type);
  return 'inline';
}

/** The key of a transition object an inspection event reports as taken. */
function takenKey(t: TransitionLike): string {
  const list = t.eventType === '' ? (t.source.always ?? []) : (t.source.transitions.get(t.eventType) ?? []);
  return transitionKey(t.source.id, t.eventType === '' ? 'always' : t.eventType, list.indexOf(t));
}

/** Collects, per machine id, the transitions that actors of that machine took. */
export class TransitionLedger {
  readonly taken = new Map<string, Set<string>>();

  /** An `inspect` observer: records the transitions of every microstep. */
  readonly observe = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.microstep') return;
    const machineId = (event.snapshot as { machine?: { id: string } }).machine?.id;
    if (!machineId) return;
    const set = this.taken.get(machineId) ?? new Set<string>();
    this.taken.set(machineId, set);
    for (const t of event._transitions as unknown as TransitionLike[]) set.add(takenKey(t));
  };

  missing(machine: AnyStateMachine): ChartTransition[] {
    const taken = this.taken.get(machine.id) ?? new Set<string>();
    return chartTransitions(machine).filter((t) => !taken.has(t.key));
  }

  /** One row per machine: transitions in the definition, how many were taken, the share. */
  table(machines: AnyStateMachine[]): string {
    const rows = machines.map((m) => {
      const all = chartTransitions(m).length;
      const covered = all - this.missing(m).length;
      return `${m.id.padEnd(14)} ${String(all).padStart(11)} ${String(covered).padStart(8)} ${((100 * covered) / all).toFixed(1).padStart(7)} %`;
    });
    return ['machine        transitions  covered   share', ...rows].join('\n');
  }
}
