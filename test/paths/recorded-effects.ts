import { assign, type AnyMachineSnapshot } from 'xstate';

/**
 * In traversal no effect runs: a chart's effect request is recorded by name in the snapshot, so
 * the model of the surroundings knows which reply the chart waits for, and a path step knows which
 * effect its event answers.
 */
export const recordEffect = assign((_: unknown, params: { name: string }) => ({ pendingEffect: params.name })) as never;
export const forgetEffect = assign({ pendingEffect: null }) as never;

export function pendingEffectOf(snapshot: AnyMachineSnapshot): string | null {
  return (snapshot.context as { pendingEffect?: string | null }).pendingEffect ?? null;
}
