import type { PathStep } from './tour.js';

const value = (s: { value: unknown }) => JSON.stringify(s.value);

/**
 * Where a director is in its path. When the actor comes to rest where the next step starts, that
 * step is taken, and with it each following command that leaves the actor where it is (a cancel
 * that only marks the turn, an approval the turn passes on): those happen before it moves again.
 */
export class StepCursor<Env> {
  next = 0;

  constructor(
    readonly path: PathStep<Env>[],
    private readonly commands: ReadonlySet<string>,
  ) {}

  get done(): boolean {
    return this.next === this.path.length;
  }

  /** The step after the one being taken. */
  get following(): PathStep<Env> | undefined {
    return this.path[this.next];
  }

  /** The steps not taken yet. */
  rest(): PathStep<Env>[] {
    return this.path.slice(this.next);
  }

  startsAt(snapshot: { value: unknown }): boolean {
    const step = this.path[this.next];
    return step !== undefined && value(snapshot) === value(step.state.machine);
  }

  /** Yields the steps to take now; `following` is the next one while each is taken. */
  *take(): Generator<PathStep<Env>> {
    for (;;) {
      const step = this.path[this.next++]!;
      yield step;
      const stays = this.commands.has(step.event.type) && value(step.next.machine) === value(step.state.machine);
      if (!this.following || !stays) return;
    }
  }
}
