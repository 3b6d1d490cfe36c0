import { describe, expect, it } from 'vitest';
import { toolCallMachine, turnMachine } from '../../src/index.js';
import { Stage } from './stage.js';
import { edgeTour } from './tour.js';
import { TransitionLedger } from './transitions.js';
import { TurnDirector } from './turn-director.js';
import { TURN_LIMITS, turnModel } from './turn-model.js';

const ledger = new TransitionLedger();

/** Drives one generated turn path through a fresh runtime and returns what went wrong, if anything. */
async function driveTurnPath(path: ReturnType<typeof edgeTour<import('./turn-model.js').TurnEnv>>[number]) {
  const director = new TurnDirector(path);
  const stage = await Stage.open(director, [ledger.observe], TURN_LIMITS);
  director.stage = stage;
  try {
    const started = await stage.session.startTurn({ clientRequestId: 'path', input: [{ type: 'text', text: director.userText() }] });
    if (!started.ok) return [`turn refused: ${JSON.stringify(started.error)}`];
    const outcome = await stage.outcomeOf(started.turnId);
    director.finish();
    await stage.checkEnd(started.turnId, outcome);
    const problems = [...stage.violations];
    if (!director.done) problems.push(`the runtime left the path after step ${director.rested.length}`);
    const expected = director.expectedRests();
    if (JSON.stringify(director.rested) !== JSON.stringify(expected)) problems.push(`rested in ${director.rested.join(' → ')}; the path says ${expected.join(' → ')}`);
    if (JSON.stringify(outcome.status) !== expected.at(-1)) problems.push(`outcome ${outcome.status} but the chart ended in ${expected.at(-1)}`);
    return problems;
  } finally {
    await stage.close();
  }
}

describe('generated paths through the real runtime (XS-5)', () => {
  const turnPaths = edgeTour(turnModel);

  it(`drives ${turnPaths.length} turn-chart paths and keeps the invariants after every step`, async () => {
    const failures: string[] = [];
    for (const [i, path] of turnPaths.entries()) {
      const problems = await driveTurnPath(path);
      if (problems.length > 0) failures.push(`path ${i}: ${path.map((s) => `${JSON.stringify(s.state.machine.value)} ${s.event.type}`).join(' | ')}\n  ${problems.join('\n  ')}`);
    }
    expect(failures.slice(0, 5).join('\n\n')).toBe('');
  }, 120_000);

  it('takes every transition of the turn and tool-call charts', () => {
    console.log(ledger.table([turnMachine, toolCallMachine]));
    expect(ledger.missing(turnMachine).map((t) => t.key)).toEqual([]);
  });
});
