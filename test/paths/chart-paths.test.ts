import { describe, expect, it } from 'vitest';
import { sessionMachine, stallWatchdogMachine, taskMachine, toolCallMachine, turnMachine } from '../../src/index.js';
import { driveTaskPath } from './task-director.js';
import { TASK_SCENARIOS, taskModel } from './task-model.js';
import { SessionDirector } from './session-director.js';
import { ToolCallDirector } from './tool-call-director.js';
import { DOOM_THRESHOLD, loopRulesOf, RETRY_POLICY, TOOL_CALL_SCENARIOS, toolCallModel, type ToolCallScenario } from './tool-call-model.js';

/** Issue 30: the tools' real time limit in a retry path: long enough that a cancel or stop a path makes lands first. */
const RETRY_TOOL_TIMEOUT_MS = 50;
import { checkTurnEnds } from './session-ends.js';
import { SESSION_LIMITS, SESSION_SCENARIOS, sessionModel, type SessionEnv, type SessionScenario } from './session-model.js';
import { Stage } from './stage.js';
import { edgeTour, type PathStep } from './tour.js';
import { TransitionLedger } from './transitions.js';
import { TurnDirector } from './turn-director.js';
import { GUARDED_CONFIG, PATH_DAILY_TOKENS, PATH_PRINCIPAL, startsWithBudgetSpent, TURN_SCENARIOS, turnLimitsOf, turnModel, type TurnEnv, type TurnScenario } from './turn-model.js';
import type { TurnContext } from '../../machines/turn.machine.js';
import type { TurnOutcome } from '../../src/index.js';

const ledger = new TransitionLedger();

/**
 * Transitions no public input can take, each explained in its chart. The session's `onError`
 * catches an exception escaping the turn actor, which only a defect in a provided action or guard
 * could raise; it exists so such a defect ends the turn with a typed failure instead of a hang.
 */
const UNREACHABLE_SESSION_TRANSITIONS = { 'session.running xstate.error.actor.turn#0': 'defect guard' };

/**
 * Issue 26: the transitions only a turn its host left running takes — resumed where storage has it,
 * its awaited approvals answered before it asks again, parked — and an approval's expiry. Each path
 * starts a fresh turn in a fresh runtime, so none of them sets those up; the real restarts, kills and
 * parks of test/runtime/durability/resume.test.ts, test/host/turn-chaos-sqlite.test.ts and
 * test/reliability/turn-chaos.test.ts take every one of them.
 *
 * Issue 30: an approval batch's transitions too (held calls, the batch released). The paths'
 * scenarios never open one; test/runtime/loop/parallel-writes.test.ts runs batches on the real
 * runtime and test/machines/tool-call.machine.test.ts takes each hold of the tool-call chart.
 */
const RESUME_TRANSITIONS = {
  turn: [
    'turn.starting effect.done#1',
    'turn.starting effect.done#2',
    'turn.starting effect.done#3',
    'turn.starting effect.done#4',
    // Issue 30's approval batches (opened, held, released, the next batch): the path scenarios' calls need no approval; test/runtime/loop/parallel-writes.test.ts takes them.
    'turn.running_model.writing_response effect.done#4',
    'turn.running_tools.tool_call xstate.done.actor.toolCall#0',
    'turn.running_tools.tool_call xstate.done.actor.toolCall#1',
    'turn.running_tools.tool_call xstate.done.actor.toolCall#2',
    'turn.running_tools.tool_call xstate.done.actor.toolCall#6',
    'turn.running_tools.tool_call xstate.done.actor.toolCall#7',
    'turn.running_tools.tool_call xstate.error.actor.toolCall#0',
  ],
  toolCall: [
    // Issue 30: a call held by its approval batch, and taken up once the batch is cleared (test/machines/tool-call.machine.test.ts, 'in an approval batch').
    'toolCall.active.screening always#0',
    'toolCall.active.screening always#1',
    'toolCall.active.screening always#21',
    'toolCall.active.screening always#25',
    'toolCall.active.dispatch_allowed always#5',
    'toolCall.active.dispatch_allowed always#9',
    'toolCall.active.tool_allowed always#4',
    'toolCall.active.tool_allowed always#8',
    'toolCall.active.waiting_permission permission.resolve#0',
    'toolCall.active.waiting_permission.deadline always#0',
    'toolCall.active.waiting_permission.expiring xstate.after.approvalExpiry.toolCall.active.waiting_permission.expiring#0',
    'toolCall.concluding always#0',
  ],
  session: [
    'session.idle always#0',
    'session.running session.resolve_permission#1',
    'session.running session.park#0',
    'session.running turn.permission_requested#0',
    // A turn's end refused by the fence: test/runtime/durability/resume.test.ts takes it.
    'session.finishing effect.done#0',
  ],
};

/** Drives one generated turn path through a fresh runtime and returns what went wrong, if anything. */
async function driveTurnPath(path: PathStep<TurnEnv>[], scenario: TurnScenario) {
  const director = new TurnDirector(path);
  const { maxModelCalls, doomLoopThreshold, runTimeoutMs } = turnLimitsOf(scenario);
  const stage = await Stage.open(director, [ledger.observe], {
    limits: { maxModelCalls, doomLoopThreshold, runTimeoutMs },
    ...(scenario.parallelToolCalls !== null && { parallelToolCalls: scenario.parallelToolCalls }),
    ...(scenario.name === 'guarded' && { guardrails: GUARDED_CONFIG, principal: { name: PATH_PRINCIPAL, dailyTokens: PATH_DAILY_TOKENS } }),
  });
  director.stage = stage;
  try {
    // Issue 25: the principal's budget spent before the turn starts (today's and, should the turn start past midnight, tomorrow's).
    if (startsWithBudgetSpent(path)) {
      for (const day of [Date.now(), Date.now() + 86_400_000]) await stage.storage.addPrincipalTokens(PATH_PRINCIPAL, new Date(day).toISOString().slice(0, 10), PATH_DAILY_TOKENS);
    }
    const started = await stage.session.startTurn({ clientRequestId: 'path', input: [{ type: 'text', text: director.userText() }] });
    if (!started.ok) return [`turn refused: ${JSON.stringify(started.error)}`];
    const outcome = await stage.outcomeOf(started.turnId);
    director.finish();
    await stage.checkEnd(started.turnId, outcome);
    const problems = [...stage.violations];
    // Where the turn rested, then which events it took: an effect that finished where the path
    // has it aborted (or the reverse) rests in the same states.
    const off = director.rests.problem() ?? (director.done ? director.eventProblem() : 'the path has steps the runtime never took');
    if (off) problems.push(off);
    if (JSON.stringify(outcome.status) !== director.rests.expected.at(-1)) problems.push(`outcome ${outcome.status} but the chart ended in ${director.rests.expected.at(-1)}`);
    // The guardrails end turns that rest alike (completed, failed): what ended them must match too.
    if (scenario.name === 'guarded') problems.push(...guardrailEndProblems(path, outcome));
    return problems;
  } finally {
    await stage.close();
  }
}

/** The failure code, or what stopped a completed turn, as the path's last step has it against the runtime's outcome. */
function guardrailEndProblems(path: PathStep<TurnEnv>[], outcome: TurnOutcome): string[] {
  const expected = (path.at(-1)!.next.machine.context as TurnContext).outcome;
  const said = (o: TurnOutcome | null) => (o?.status === 'failed' ? o.code : o?.status === 'completed' ? (o.stoppedBy ?? 'completed') : (o?.status ?? null));
  // The traversal does not know which write a `failed` tool call lost: only the guardrails' own codes are compared.
  const own = new Set(['completed', 'token_budget', 'mistake_limit', 'stalled', 'budget_exhausted']);
  if (!own.has(String(said(expected))) && !own.has(String(said(outcome)))) return [];
  return said(expected) === said(outcome) ? [] : [`the path ends ${said(expected)} but the turn ended ${said(outcome)}`];
}

/** Drives one generated session path; every command must come back typed and every turn end consistent. */
async function driveSessionPath(path: PathStep<SessionEnv>[], scenario: SessionScenario) {
  const director = new SessionDirector(path);
  const limits = { ...SESSION_LIMITS, runTimeoutMs: scenario.runTimeoutMs };
  const stage = await Stage.open(director, [ledger.observe], { limits, busyPolicy: scenario.busyPolicy });
  director.stage = stage;
  try {
    director.start();
    await director.ended;
    const answers = await Promise.all(director.answers);
    const problems = [...stage.violations, ...director.wrongAnswers];
    for (const a of answers) if (a !== undefined && typeof (a as { ok?: unknown }).ok !== 'boolean') problems.push(`untyped answer ${JSON.stringify(a)}`);
    problems.push(...(await checkTurnEnds(stage, director)));
    const off = director.rests.problem();
    if (off) problems.push(off);
    return problems;
  } finally {
    await stage.close();
  }
}

/** Drives one generated tool-call path: the call is the `target` of a turn that asks for it. */
async function driveToolCallPath(path: PathStep<null>[], scenario: ToolCallScenario) {
  const director = new ToolCallDirector(path, scenario);
  const limits = { maxModelCalls: 5, doomLoopThreshold: loopRulesOf(scenario).hard, runTimeoutMs: null };
  const guardrails = scenario.hint ? { loop: { soft: DOOM_THRESHOLD } } : undefined;
  const stage = await Stage.open(director, [ledger.observe], {
    limits,
    permissionMode: scenario.mode,
    dispatchHooks: scenario.hooks === true,
    guardrails,
    nonInteractive: scenario.nonInteractive === true,
    ...(scenario.delegation === 'allowed' && { delegation: { maxChildren: 1 } }),
    ...(scenario.rule && { permissions: { [scenario.name]: scenario.rule } }),
    ...(scenario.retry && { retry: { policy: { ...RETRY_POLICY, continueLoop: scenario.retry === 'continue' }, toolTimeoutMs: RETRY_TOOL_TIMEOUT_MS } }),
  });
  director.stage = stage;
  try {
    const started = await stage.session.startTurn({ clientRequestId: 'path', input: [{ type: 'text', text: director.userText() }] });
    if (!started.ok) return [`turn refused: ${JSON.stringify(started.error)}`];
    const outcome = await stage.outcomeOf(started.turnId);
    await stage.checkEnd(started.turnId, outcome);
    const problems = [...stage.violations];
    const off = director.rests.problem();
    if (off) problems.push(off);
    else if (!director.done) problems.push('the path has steps the runtime never took');
    return problems;
  } finally {
    await stage.close();
  }
}

const describePath = <Env>(path: PathStep<Env>[]) => path.map((s) => `${JSON.stringify(s.state.machine.value)} ${s.event.type}`).join(' | ');

describe('generated paths through the real runtime (XS-5)', () => {
  const turnPaths = TURN_SCENARIOS.flatMap((scenario) => edgeTour(turnModel(scenario)).map((path) => ({ scenario, path })));
  const parallelPaths = turnPaths.filter(({ scenario }) => scenario.name === 'parallel').length;

  it(`drives ${turnPaths.length} turn-chart paths (${parallelPaths} with parallel tool calls) and keeps the invariants after every step`, async () => {
    const failures: string[] = [];
    for (const [i, { scenario, path }] of turnPaths.entries()) {
      const problems = await driveTurnPath(path, scenario);
      if (problems.length > 0) failures.push(`path ${i} (${scenario.name}): ${describePath(path)}\n  ${problems.join('\n  ')}`);
    }
    expect(failures.slice(0, 5).join('\n\n')).toBe('');
  }, 120_000);

  const toolCallPaths = TOOL_CALL_SCENARIOS.flatMap((scenario) => edgeTour(toolCallModel(scenario)).map((path) => ({ scenario, path })));

  it(`drives ${toolCallPaths.length} tool-call-chart paths over ${TOOL_CALL_SCENARIOS.length} scenarios and keeps the invariants after every step`, async () => {
    const failures: string[] = [];
    for (const [i, { scenario, path }] of toolCallPaths.entries()) {
      const problems = await driveToolCallPath(path, scenario);
      if (problems.length > 0) failures.push(`path ${i} (${JSON.stringify(scenario)}): ${describePath(path)}\n  ${problems.join('\n  ')}`);
    }
    expect(failures.slice(0, 5).join('\n\n')).toBe('');
  }, 120_000);

  const sessionPaths = SESSION_SCENARIOS.flatMap((scenario) => edgeTour(sessionModel(scenario)).map((path) => ({ scenario, path })));

  it(`drives ${sessionPaths.length} session-chart paths over ${SESSION_SCENARIOS.length} busy policies and time limits: every command answered with a typed result, every turn ended consistently`, async () => {
    const failures: string[] = [];
    for (const [i, { scenario, path }] of sessionPaths.entries()) {
      const problems = await driveSessionPath(path, scenario);
      if (problems.length > 0) failures.push(`path ${i} (${JSON.stringify(scenario)}): ${describePath(path)}\n  ${problems.join('\n  ')}`);
    }
    expect(failures.slice(0, 5).join('\n\n')).toBe('');
  }, 120_000);

  const taskPaths = TASK_SCENARIOS.flatMap((scenario) => edgeTour(taskModel(scenario)).map((path) => ({ scenario, path })));

  it(`drives ${taskPaths.length} task-chart paths from ${TASK_SCENARIOS.length} starting states through a real task runner: every path ends where the chart does`, async () => {
    const failures: string[] = [];
    for (const [i, { scenario, path }] of taskPaths.entries()) {
      const problems = await driveTaskPath(path, scenario, ledger.observe);
      if (problems.length > 0) failures.push(`path ${i} (${scenario.startState}): ${describePath(path)}\n  ${problems.join('\n  ')}`);
    }
    expect(failures.slice(0, 5).join('\n\n')).toBe('');
  }, 120_000);

  it('takes every transition of the turn, tool-call, watchdog and task charts but the resumption ones, and all but those and the documented one of the session chart', () => {
    console.log(ledger.table([turnMachine, toolCallMachine, stallWatchdogMachine, taskMachine, sessionMachine]));
    expect(ledger.missing(taskMachine).map((t) => t.key)).toEqual([]);
    expect(ledger.missing(turnMachine).map((t) => t.key)).toEqual(RESUME_TRANSITIONS.turn);
    expect(ledger.missing(toolCallMachine).map((t) => t.key)).toEqual(RESUME_TRANSITIONS.toolCall);
    expect(ledger.missing(stallWatchdogMachine).map((t) => t.key)).toEqual([]);
    expect(ledger.missing(sessionMachine).map((t) => t.key).sort()).toEqual([...RESUME_TRANSITIONS.session, ...Object.keys(UNREACHABLE_SESSION_TRANSITIONS)].sort());
  });
});
