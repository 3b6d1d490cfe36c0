import { assign, type AnyMachineSnapshot } from 'xstate';

/**
 * In traversal no effect runs: a chart's effect request is recorded by name in the snapshot, so
 * the model of the surroundings knows which reply the chart waits for, and a path step knows which
 * effect its event answers. An abort (the request's signal aborts, its reply still comes) is
 * recorded too: the reply the chart still waits for may then be the aborted effect's failure.
 */
export const recordEffect = assign((_: unknown, params: { name: string }) => ({ pendingEffect: params.name, abortedEffect: null })) as never;
export const forgetEffect = assign({ pendingEffect: null, abortedEffect: null }) as never;
type Recorded = { pendingEffect?: string | null; abortedEffect?: string | null };
export const abortEffect = assign<Recorded, never, undefined, never, never>(({ context }) => ({ abortedEffect: context.pendingEffect ?? null })) as never;

export function pendingEffectOf(snapshot: AnyMachineSnapshot): string | null {
  return (snapshot.context as { pendingEffect?: string | null }).pendingEffect ?? null;
}

/** The pending effect, if the chart aborted it and still waits for its reply. */
export function abortedEffectOf(snapshot: AnyMachineSnapshot): string | null {
  return (snapshot.context as { abortedEffect?: string | null }).abortedEffect ?? null;
}
