import type { PathStep } from './tour.js';

const value = (s: { value: unknown }) => JSON.stringify(s.value);

/**
 * The states an actor came to rest in, against the ones a path says it will. The first rest off
 * the path calls `onDiverge` at once, so a runtime that left the path is stopped and reported
 * instead of waiting for an event the path will never arrange.
 */
export class RestLog {
  readonly rested: string[] = [];
  readonly expected: string[];
  diverged = false;

  constructor(
    path: PathStep<unknown>[],
    private readonly onDiverge: () => void,
  ) {
    const values = [value(path[0]!.state.machine), ...path.map((s) => value(s.next.machine))];
    this.expected = values.filter((v, i) => v !== values[i - 1]);
  }

  record(snapshot: { value: unknown }): void {
    const v = value(snapshot);
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
