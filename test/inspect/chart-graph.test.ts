import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { sessionMachine } from '../../machines/session.machine.js';
import { stallWatchdogMachine } from '../../machines/stall-watchdog.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';
import { turnMachine } from '../../machines/turn.machine.js';
import { chartGraph, type ChartEdge } from '../../src/inspect/chart-graph.js';
import { chartLayouts } from '../../src/inspect/chart-layout.js';

/** A transition as the chart's source config writes it, with its target resolved to a state id. */
interface Written {
  source: string;
  event: string;
  target: string | null;
  guard: string | null;
}

type Config = {
  id?: string;
  states?: Record<string, Config>;
  on?: Record<string, unknown>;
  always?: unknown;
  after?: Record<string, unknown>;
  invoke?: { id?: string; src?: unknown; onDone?: unknown; onError?: unknown } | { id?: string; onDone?: unknown; onError?: unknown }[];
};

/** Every transition in the machine's config, read independently of `chartGraph` (from the config, not the state nodes). */
function writtenTransitions(machine: AnyStateMachine): Written[] {
  const out: Written[] = [];
  const visit = (config: Config, id: string, parentId: string | null): void => {
    const add = (event: string, spec: unknown): void => {
      for (const t of Array.isArray(spec) ? spec : [spec]) {
        const tr = (typeof t === 'string' ? { target: t } : t) as { target?: string | string[]; guard?: unknown };
        const guard = typeof tr.guard === 'string' ? tr.guard : tr.guard ? 'any' : null;
        const targets = tr.target === undefined ? [null] : Array.isArray(tr.target) ? tr.target : [tr.target];
        for (const target of targets) out.push({ source: id, event, target: target === null ? null : resolve(target, parentId), guard });
      }
    };
    for (const [event, spec] of Object.entries(config.on ?? {})) add(event, spec);
    if (config.always) add('', config.always);
    for (const [delay, spec] of Object.entries(config.after ?? {})) add(`after:${delay}`, spec);
    const invokes = config.invoke === undefined ? [] : Array.isArray(config.invoke) ? config.invoke : [config.invoke];
    for (const inv of invokes) {
      if (inv.onDone) add(`xstate.done.actor.${inv.id}`, inv.onDone);
      if (inv.onError) add(`xstate.error.actor.${inv.id}`, inv.onError);
    }
    for (const [key, child] of Object.entries(config.states ?? {})) visit(child, `${id}.${key}`, id);
  };
  visit(machine.config as Config, machine.id, null);
  return out;
}

function resolve(target: string, parentId: string | null): string {
  if (target.startsWith('#')) return target.slice(1);
  return `${parentId}.${target}`;
}

function matches(edge: ChartEdge, t: Written): boolean {
  const event = t.event.startsWith('after:') ? edge.kind === 'after' && edge.label === `after ${t.event.slice(6)}` : edge.eventType === t.event;
  const guard = t.guard === null ? edge.guard === null : t.guard === 'any' ? edge.guard !== null : edge.guard === t.guard;
  const target = t.target === null ? edge.internal && edge.target === t.source : !edge.internal && edge.target === t.target;
  return edge.source === t.source && event && guard && target;
}

describe('definition → graph', () => {
  for (const machine of [sessionMachine, turnMachine, toolCallMachine, stallWatchdogMachine] as AnyStateMachine[]) {
    it(`every transition of the ${machine.id} chart appears, eventless and invoke done/error ones included`, () => {
      const graph = chartGraph(machine);
      const written = writtenTransitions(machine);
      expect(written.length).toBeGreaterThan(machine === stallWatchdogMachine ? 4 : 10);
      for (const t of written) expect(graph.edges.some((e) => matches(e, t)), JSON.stringify(t)).toBe(true);
      // One edge per written transition and target: nothing invented.
      expect(graph.edges).toHaveLength(written.length);
      const ids = new Set(graph.nodes.map((n) => n.id));
      for (const e of graph.edges) expect(ids.has(e.source) && ids.has(e.target)).toBe(true);
    });
  }

  it('names states <machine id>.<path with dots>, marks initial, final and invoking states, and names guards', () => {
    const turn = chartGraph(turnMachine);
    const node = (id: string) => turn.nodes.find((n) => n.id === id);
    expect(node('turn.running_tools.tool_call.waiting_permission')?.parent).toBe('turn.running_tools.tool_call');
    expect(node('turn.starting')?.initial).toBe(true);
    expect(node('turn.running_model.checking')?.initial).toBe(true);
    expect(node('turn.completed')?.type).toBe('final');
    expect(node('turn.running_tools.tool_call')?.invokes).toEqual(['toolCall']);
    const always = turn.edges.filter((e) => e.kind === 'always');
    expect(always.map((e) => e.source)).toContain('turn.running_model.checking');
    expect(always.find((e) => e.target === 'turn.interrupted')?.label).toBe('always [interrupted]');
    expect(turn.edges.some((e) => e.label === 'effect.done [and(isOverLine, compactedThisCall)]')).toBe(true);
    expect(turn.edges.some((e) => e.kind === 'error' && e.label === 'error: toolCall')).toBe(true);
    const session = chartGraph(sessionMachine);
    expect(session.edges.some((e) => e.kind === 'after' && e.target === 'session.running.past_deadline')).toBe(true);
    expect(session.edges.some((e) => e.kind === 'done' && e.source === 'session.running' && e.target === 'session.finishing')).toBe(true);
  });

  it('lays every chart out: each state inside its parent, each transition with a target routed', async () => {
    for (const layout of await chartLayouts()) {
      const boxes = new Map(layout.nodes.map((n) => [n.id, n]));
      for (const node of layout.nodes) {
        expect(node.width).toBeGreaterThan(0);
        const parent = node.parent ? boxes.get(node.parent)! : null;
        if (!parent) continue;
        expect(node.x).toBeGreaterThanOrEqual(parent.x);
        expect(node.y).toBeGreaterThanOrEqual(parent.y);
        expect(node.x + node.width).toBeLessThanOrEqual(parent.x + parent.width + 0.5);
        expect(node.y + node.height).toBeLessThanOrEqual(parent.y + parent.height + 0.5);
      }
      const routes = new Map(layout.routes.map((r) => [r.id, r]));
      for (const edge of layout.edges) {
        if (edge.internal) continue;
        const route = routes.get(edge.route ?? '');
        expect(route?.points.length, edge.id).toBeGreaterThanOrEqual(2);
        expect([route?.source, route?.target]).toEqual([edge.source, edge.target]);
        expect(route?.members.map((m) => m.label)).toContain(edge.label);
      }
    }
  });
});
