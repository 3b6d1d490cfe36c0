import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresStorage } from '../../storage/postgres.js';
import type { StoredMessage } from '../../src/index.js';
import { submitTask, TERMINAL_STATES_LIST, type TaskEventEnvelope } from './chaos-imports.js';
import { until } from './poll.js';
import pg from 'pg';
import { AMQP_URL, PG_URL, TaskStack, type RecordingConsumer } from './task-stack.js';
import { bundled } from './bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ChaosOptions {
  workers: number;
  tasks: number;
  kills: number;
  seed: number;
  /** Each worker's concurrency. */
  concurrency: number;
  /** How long the run may take before it gives up. */
  deadlineMs: number;
}

export interface ChaosReport {
  seed: number;
  kills: number;
  /** `state_changed` events with reason `recovered_from_checkpoint`, over all tasks. */
  recovered: number;
  /** Tasks a kill caught RUNNING, PAUSED or ABORTING on the killed worker: each must have been recovered after it. */
  interrupted: number;
  gapsFilled: number;
  duplicatesDropped: number;
  problems: string[];
  elapsedMs: number;
}

/** A small seeded generator (mulberry32): a run is replayed by its seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface WorkerProcess {
  child: ChildProcess;
  exited: Promise<unknown>;
}

/**
 * Workers in processes of their own take `tasks` tasks (two turns, five `step` runs each) while
 * `kills` of them, chosen and timed by the seed, are SIGKILLed and replaced. Then every task must be
 * in exactly one terminal state (one terminal transition, one `session_closed`), every consumer —
 * one of them restarted along the way — must have handled every task's events exactly once, in
 * order, without a gap, and no tool call may have run twice, nor a step with a durable result again.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const random = seeded(options.seed);
  const stack = await new TaskStack().ready();
  const runsFile = path.join(tmpdir(), `turnchart-chaos-${randomUUID()}.jsonl`);
  writeFileSync(runsFile, '');
  const live: WorkerProcess[] = [];
  const spawnWorker = () => startChaosWorker({ databaseUrl: stack.databaseUrl, amqpUrl: AMQP_URL!, namespace: stack.namespace, runsFile, concurrency: options.concurrency });
  try {
    const steady = await stack.consumer('steady');
    let restarted: RecordingConsumer = await stack.consumer('restarted');
    const restartedEvents: TaskEventEnvelope[] = restarted.events;
    for (let i = 0; i < options.workers; i++) live.push(await spawnWorker());
    const link = await stack.link();
    const ids = Array.from({ length: options.tasks }, (_, i) => `chaos-${options.seed}-${i}`);
    for (const taskId of ids) await submitTask({ tasks: stack.tasks, link, namespace: stack.namespace }, { taskId, prompts: ['steps 3', 'steps 2'] });

    const kills: Kill[] = [];
    for (let k = 0; k < options.kills; k++) {
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(random() * 700)));
      // The victim is drawn among the workers running a task right now, so every kill interrupts work.
      const busy = await busyWorkers(stack, live);
      const pool = busy.length > 0 ? busy : live;
      const victim = pool[Math.floor(random() * pool.length)]!;
      live.splice(live.indexOf(victim), 1);
      const held = await tasksHeldBy(stack, victim.child.pid!);
      victim.child.kill('SIGKILL');
      kills.push({ held, killedAtMs: Date.now() });
      await victim.exited;
      if (k === 0) {
        // A consumer restarted mid-run: it resumes from the position it saved.
        await restarted.close();
        restarted = await stack.consumer('restarted', { handle: (event) => void restartedEvents.push(event) });
      }
      live.push(await spawnWorker());
    }

    await until('every task terminal', async () => (await Promise.all(ids.map((id) => stack.tasks.getTask(id)))).every((t) => t && TERMINAL_STATES_LIST.includes(t.state)), options.deadlineMs);
    const lastSequence = new Map((await Promise.all(ids.map((id) => stack.tasks.getTask(id)))).map((t) => [t!.id, t!.eventSequence]));
    const caughtUp = (events: TaskEventEnvelope[]) => ids.every((id) => events.filter((e) => e.session_id === id).length >= lastSequence.get(id)!);
    await until('both consumers caught up', () => caughtUp(steady.events) && caughtUp(restartedEvents), 60_000);

    const recoveries = await recoveryProblems(stack, kills);
    const problems = [
      ...(await terminalProblems(stack, ids)),
      ...recoveries.problems,
      ...(await Promise.all(streamProblems('steady', steady.events, ids, stack))).flat(),
      ...(await Promise.all(streamProblems('restarted', restartedEvents, ids, stack))).flat(),
      ...(await toolProblems(stack, ids, runsFile)),
    ];
    const recovered = steady.events.filter((e) => e.payload.event_type === 'state_changed' && e.payload.data.reason === 'recovered_from_checkpoint').length;
    return {
      seed: options.seed,
      kills: options.kills,
      recovered,
      interrupted: recoveries.interrupted.size,
      gapsFilled: steady.gaps.length + restarted.gaps.length,
      duplicatesDropped: steady.duplicates.length + restarted.duplicates.length,
      problems,
      elapsedMs: Date.now() - started,
    };
  } finally {
    for (const w of live) w.child.kill('SIGKILL');
    await Promise.all(live.map((w) => w.exited));
    rmSync(runsFile, { force: true });
    await stack.close();
  }
}

/** The live workers that hold the session of a RUNNING task (waiting a little for one while tasks are still pending). */
async function busyWorkers(stack: TaskStack, live: WorkerProcess[]): Promise<WorkerProcess[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      const { rows } = await client.query<{ pid: number }>(
        `select distinct s.owner_pid as pid from "${stack.schema}".tasks t join "${stack.schema}".sessions s on s.id = t.agent_session_id where t.state = 'RUNNING'`,
      );
      const pids = new Set(rows.map((r) => Number(r.pid)));
      const busy = live.filter((w) => pids.has(w.child.pid!));
      if (busy.length > 0) return busy;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return [];
  } finally {
    await client.end();
  }
}

interface Kill {
  /** The tasks whose agent session the victim held just before it was killed. */
  held: string[];
  killedAtMs: number;
}

async function tasksHeldBy(stack: TaskStack, pid: number): Promise<string[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `select t.id from "${stack.schema}".tasks t join "${stack.schema}".sessions s on s.id = t.agent_session_id where s.owner_pid = $1`,
      [pid],
    );
    return rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}

const UNFINISHED = new Set(['RUNNING', 'PAUSED', 'ABORTING']);

/**
 * LC-4: a task a kill left RUNNING, PAUSED or ABORTING (its state as its stored events had it at
 * the kill) is taken over by another worker, which announces `recovered_from_checkpoint` after the
 * kill. A task that was still PENDING starts over without a recovery, and one already terminal is
 * only closed.
 */
async function recoveryProblems(stack: TaskStack, kills: Kill[]): Promise<{ interrupted: Set<string>; problems: string[] }> {
  const interrupted = new Set<string>();
  const problems: string[] = [];
  for (const [k, { held, killedAtMs }] of kills.entries()) {
    for (const id of held) {
      const changes = (await stack.tasks.listTaskEvents(id)).filter((e) => e.eventType === 'state_changed');
      const stateThen = changes.filter((e) => e.createdAtMs <= killedAtMs).at(-1)?.data.to_state;
      if (typeof stateThen !== 'string' || !UNFINISHED.has(stateThen)) continue;
      interrupted.add(id);
      const recovered = changes.some((e) => e.data.reason === 'recovered_from_checkpoint' && e.createdAtMs >= killedAtMs);
      if (!recovered) problems.push(`${id}: kill ${k + 1} left it ${stateThen}, and no worker recovered it after`);
    }
  }
  return { interrupted, problems };
}

async function startChaosWorker(config: object): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [bundled('chaos-worker'), JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('chaos worker ready')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`a chaos worker exited before it was ready:\n${output}`)));
  });
  return { child, exited };
}

/** Exactly one terminal state per task: its row, one transition into it, one `session_closed` saying it, last. */
async function terminalProblems(stack: TaskStack, ids: string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const id of ids) {
    const task = (await stack.tasks.getTask(id))!;
    const events = await stack.tasks.listTaskEvents(id);
    const terminal = events.filter((e) => e.eventType === 'state_changed' && TERMINAL_STATES_LIST.includes(e.data.to_state as never));
    const closed = events.filter((e) => e.eventType === 'session_closed');
    if (task.state !== 'COMPLETED') problems.push(`${id} ended ${task.state} (${task.reason})`);
    if (terminal.length !== 1 || terminal[0]!.data.to_state !== task.state) problems.push(`${id}: ${terminal.length} terminal transitions`);
    if (closed.length !== 1 || closed[0]!.data.final_state !== task.state || events.at(-1)?.eventType !== 'session_closed') problems.push(`${id}: session_closed ${closed.length} times, or not last`);
  }
  return problems;
}

/** What a consumer handled: per task, sequences 1…N once each, in order, and the stored events exactly. */
function streamProblems(name: string, events: TaskEventEnvelope[], ids: string[], stack: TaskStack): Promise<string[]>[] {
  return ids.map(async (id) => {
    const handled = events.filter((e) => e.session_id === id);
    const stored = await stack.tasks.listTaskEvents(id);
    const sequences = handled.map((e) => e.payload.sequence);
    if (sequences.some((s, i) => s !== i + 1)) return [`${name} consumer: ${id} handled ${sequences.join(',')}`];
    if (handled.length !== stored.length || handled.some((e, i) => e.message_id !== stored[i]!.messageId)) return [`${name} consumer: ${id} differs from storage`];
    return [];
  });
}

/** No tool call ran twice; no step whose result is durable ran again (a run without one may be asked for anew). */
async function toolProblems(stack: TaskStack, ids: string[], runsFile: string): Promise<string[]> {
  const runs = readFileSync(runsFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { sessionId: string; toolCallId: string; n: number });
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const run of runs) {
    if (seen.has(run.toolCallId)) problems.push(`tool call ${run.toolCallId} ran twice`);
    seen.add(run.toolCallId);
  }
  const sessions = postgresStorage({ connectionString: stack.databaseUrl });
  try {
    for (const id of ids) {
      const sessionId = (await stack.tasks.getTask(id))!.agentSessionId!;
      problems.push(...sessionToolProblems(id, await sessions.listMessages(sessionId), runs.filter((r) => r.sessionId === sessionId)));
    }
  } finally {
    await sessions.close();
  }
  return problems;
}

/**
 * One task's step runs against its stored conversation. Each run's call is stored (in its assistant
 * message) before it runs, so each run belongs to a prompt and a step number; within those, no run
 * may come after one whose result is durable, and each step ends with exactly one durable result.
 */
function sessionToolProblems(taskId: string, messages: StoredMessage[], runs: Array<{ toolCallId: string; n: number }>): string[] {
  const callAt = new Map<string, number>();
  const prompts: number[] = [];
  const durable = new Set<string>();
  for (const { sequence, message } of messages) {
    if (message.role === 'assistant') for (const call of message.toolCalls) callAt.set(call.id, sequence);
    if (message.role === 'user' && /^steps \d+$/.test(message.text)) prompts.push(sequence);
    if (message.role === 'tool' && message.toolName === 'step' && message.status === 'succeeded') durable.add(message.toolCallId);
  }
  const problems: string[] = [];
  const groups = new Map<string, Array<{ toolCallId: string; at: number }>>();
  for (const run of runs) {
    const at = callAt.get(run.toolCallId);
    if (at === undefined) {
      problems.push(`${taskId}: tool call ${run.toolCallId} ran without a stored call`);
      continue;
    }
    const key = `${prompts.filter((p) => p < at).at(-1)}:${run.n}`;
    groups.set(key, [...(groups.get(key) ?? []), { toolCallId: run.toolCallId, at }]);
  }
  for (const [key, group] of groups) {
    group.sort((a, b) => a.at - b.at);
    const first = group.findIndex((r) => durable.has(r.toolCallId));
    if (first === -1) problems.push(`${taskId}: step ${key} has no durable result`);
    else if (first < group.length - 1) problems.push(`${taskId}: step ${key} ran again after its durable result`);
  }
  if (groups.size !== 5) problems.push(`${taskId}: ${groups.size} steps ran, 5 expected`);
  return problems;
}
