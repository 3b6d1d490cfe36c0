/**
 * The stand-in for an effect a chart names but does not implement: the runtime (or a test)
 * supplies the real one with `.provide()`, and forgetting to is a loud error, not a silent no-op.
 *
 * Typed as what it stands for, so the chart's `setup` infers the implementation's shape (the params
 * an action takes, a guard's answer) and `.provide()` checks the real one against it:
 * `notProvided<[{ context: TurnContext }], boolean>('turn', 'holdRequested')` is a guard,
 * `notProvided<[unknown, PhaseParams]>('turn', 'emitPhase')` an action with params, and
 * `notProvided('task', 'admit')` (no arguments, never returns) fits any actor logic's function.
 */
export function notProvided<Args extends unknown[] = [], Result = never>(chart: string, name: string): (...args: Args) => Result {
  return (): never => {
    throw new Error(`${chart} machine: '${name}' must be supplied with .provide()`);
  };
}
