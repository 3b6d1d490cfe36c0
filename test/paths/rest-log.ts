import type { PathStep } from './tour.js';

/** What a rest is compared by: the state value, or more (the session's queue, say). */
export type RestProjection = (snapshot: { value: unknown; context?: unknown }) => string;

const value: RestProjection = (s) => JSON.stringify(s.value);

/**
 * The states an actor came to rest in, against the ones a path says it will (compared by state
 * value, or by a projection that adds what else must match). The first rest off the path calls
 * `onDiverge` at once, so a runtime that left the path is stopped and reported instead of waiting
 * for an event the path will never arrange.
 */
export class RestLog {
  readonly rested: string[] = [];
  readonly expected: string[];
  diverged = false;

  constructor(
    path: PathStep<unknown>[],
    private readonly onDiverge: () => void,
    private readonly project: RestProjection = value,
  ) {
    const values = [project(path[0]!.state.machine), ...path.map((s) => project(s.next.machine))];
    this.expected = values.filter((v, i) => v !== values[i - 1]);
  }

  record(snapshot: { value: unknown; context?: unknown }): void {
    const v = this.project(snapshot);
    if (this.rested.at(-1) === v) return;
    this.rested.push(v);
    if (!this.diverged && this.expected[this.rested.length - 1] !== v) {
      this.diverged = true;
      this.onDiverge();
    }
  }

  /** What went wrong, if the actor did not rest exactly where the path said. */
  problem(): string | null {
    if (JSON.stringify(this.rested) === JSON.stringify(this.expected)) return null;
    return `rested in ${this.rested.join(' → ')}; the path says ${this.expected.join(' → ')}`;
  }
}
