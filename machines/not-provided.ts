/**
 * The stand-in for an effect a chart names but does not implement: the runtime (or a test)
 * supplies the real one with `.provide()`, and forgetting to is a loud error, not a silent no-op.
 */
export function notProvided(chart: string, name: string) {
  return (): never => {
    throw new Error(`${chart} machine: '${name}' must be supplied with .provide()`);
  };
}
