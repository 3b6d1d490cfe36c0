/** The shapes of a chart drawn from its definition; types only, shared with the page. */

/** One state of a chart: `id` is `<machine id>.<state path with dots>` (the root is the machine id). */
export interface ChartNode {
  id: string;
  /** The state's key (the machine id for the root). */
  key: string;
  parent: string | null;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** Whether the parent enters this state first. */
  initial: boolean;
  /** Actors the state invokes while active (`src` names). */
  invokes: string[];
  /** Set by the page on a compound state it draws folded into one box: how many states that box holds. */
  folded?: number;
}

export type EdgeKind = 'event' | 'always' | 'done' | 'error' | 'after';

/** One transition (one per target): targetless ones stay in their state (`internal`). */
export interface ChartEdge {
  id: string;
  source: string;
  target: string;
  kind: EdgeKind;
  /** The event type as XState names it ('' for an eventless transition). */
  eventType: string;
  /** What the page writes on the edge: event (or always / done: actor / after: delay) and guard. */
  label: string;
  guard: string | null;
  internal: boolean;
  reenter: boolean;
}

export interface ChartGraph {
  machineId: string;
  nodes: ChartNode[];
  edges: ChartEdge[];
}

interface Point {
  x: number;
  y: number;
}

/** A state with its box in the chart's coordinates, and the targetless transitions written inside it. */
export interface LaidOutNode extends ChartNode {
  x: number;
  y: number;
  width: number;
  height: number;
  /** Labels of the transitions that stay in this state (no target). */
  internal: string[];
}

/** A transition of the definition and the drawn route it is written on (null: targetless, listed in its state). */
export interface LaidOutEdge extends ChartEdge {
  route: string | null;
}

/**
 * One drawn arrow: every transition from one state to another shares it, one label line each, so
 * a state with nine guarded ways to the same target draws one arrow, not nine.
 */
export interface LaidOutRoute {
  id: string;
  source: string;
  target: string;
  /** The members' kind when they agree, else `event`. */
  kind: EdgeKind;
  /** The member transitions' ids and labels, in definition order. */
  members: { edge: string; label: string }[];
  /** What the arrow carries instead of the members' lines when they are too many or too long (chart-badge.ts); null writes them out. */
  badge: string | null;
  /** Start to end. */
  points: Point[];
  labelBox: { x: number; y: number; width: number; height: number } | null;
}

export interface ChartLayout {
  machineId: string;
  width: number;
  height: number;
  nodes: LaidOutNode[];
  edges: LaidOutEdge[];
  routes: LaidOutRoute[];
}

