import { fileURLToPath } from 'node:url';

/**
 * How to start one of the benchmarks' own scripts in a child process. `npm run bench` runs the
 * TypeScript compiler's output (`.turnchart/bench-build`), as a host runs the built package; run
 * from the sources (`npx tsx bench/<name>.ts`), a child runs its source through tsx too.
 */
export function benchScript(name: string): { file: string; execArgv: string[] } {
  const compiled = import.meta.url.endsWith('.js');
  return {
    file: fileURLToPath(new URL(`./${name}.${compiled ? 'js' : 'ts'}`, import.meta.url)),
    execArgv: compiled ? [] : ['--import', 'tsx'],
  };
}
