import { INTERRUPTED_RESULT_TEXT } from '../../src/protocol/messages.js';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { LedgerLine } from './chaos-host-config.js';
import { Follower, GaveUp, pause, RoundRobin, type ClientStats, type StreamEnvelope } from './chaos-client.js';
import { chaosPrompt, startChaosModelServer } from './chaos-model-server.js';
import { seeded } from './chaos-run.js';
import { spawnHost, type HostProcess } from './host-process.js';

/**
 * Issue 26's chaos, measured: interactive sessions driven over HTTP through hosts that are SIGKILLed
 * and started again at seeded moments, then checked against what the issue promises — every turn not
 * cancelled ends `completed`, no tool call that is not idempotent runs twice, no approval is lost,
 * and every event stream runs on without a gap or says `snapshot_required`.
 *
 * The hosts are `turnchart serve` processes (the bundled command line) with the configuration file
 * test/support/chaos-host-config.ts, whose two tools write a ledger line per execution; the model is
 * an OpenAI-compatible server in this process whose replies follow from the conversation
 * (test/support/chaos-model-server.ts), so any host can serve any step. Two deployments:
 * - `cluster`: N hosts on a PostgreSQL database of their own and RabbitMQ; a killed host is started
 *   again (after a drawn pause, under the same `--owner-host`) while the others take its sessions
 *   once its leases run out.
 * - `sqlite`: one host on a SQLite file, killed and started again on the same file.
 * The client round-robins every request among the hosts up, retrying on 503/504 and dropped
 * connections; each session has a follower on its event stream, which is also how the client learns
 * of approvals (a poll of the snapshot backs it up).
 */

export interface TurnChaosOptions {
  seed: number;
  deployment: { kind: 'cluster'; hosts: number; databaseUrl: string; amqpUrl: string } | { kind: 'sqlite' };
  /** Seconds (`--lease-ttl`). */
  leaseTtl: number;
  sessions: number;
  /** Turns per session, drawn in [min, max]; each turn has 1 to 5 tool steps. */
  turnsPerSession: [number, number];
  /** Sessions start one after another over this long (ms), so turns are running when the kills come. */
  startSpreadMs: number;
  kills: number;
  /** Pause before each kill, drawn in [min, max] ms. */
  killGapMs: [number, number];
  /** Share of turns that ask for an approval (one of their steps). */
  approvalShare: number;
  /** Share of those whose approvals are denied (the turn then fails `permission_denied`). */
  denyShare: number;
  /** Share of turns cancelled at a drawn moment. */
  cancelShare: number;
  /** How long the user takes to answer an approval: [min, max] ms, and a share answered slowly (up to `slowAnswerMs`). */
  answerDelayMs: [number, number];
  slowAnswerShare: number;
  slowAnswerMs: number;
  /** How long the sessions may take after the last kill before the run gives up on them. */
  settleMs: number;
  /** Model pacing: the pause between the three bursts of a reply, and a tool's hold after its side effect. */
  chunkGapMs: [number, number];
  toolHoldMs: [number, number];
}

export interface TurnRecord {
  tag: string;
  sessionId: string;
  turnId: string | null;
  steps: number;
  approveAt: number;
  deny: boolean;
  cancel: { afterMs: number; result?: 'accepted' | 'too_late' | 'ambiguous' | string } | null;
  /** The status the client last read. */
  status: string;
  /** Every status the client read, in order, repeats dropped: once terminal, a turn's status never changes. */
  seen: string[];
  outcome?: Record<string, unknown>;
  /** Kills of the session's owner while the turn ran (1-based kill numbers). */
  caughtBy: number[];
  resumed: Array<{ reason: string; fromSequence: number }>;
}

export interface ApprovalRecord {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  seenVia: 'stream' | 'snapshot' | 'poll';
  decision: 'allow_once' | 'deny';
  /** What the host said to the answer: accepted (200), refused with a code, or ambiguous (a dropped connection, then a 409). */
  answer: 'pending' | 'accepted' | 'ambiguous' | `refused ${string}`;
  /** Kills of the session's owner between the request and the answer. */
  ownerKilledBeforeAnswer: boolean;
  /** Date.now() when the client learned of it, and when its answer came back. */
  requestedAt: number;
  answeredAt?: number;
  /** Times a request for it arrived again after its answer was accepted. */
  askedAgain: number;
  /** What the host said to each answer given again: 200 means it had been waiting for it. */
  againAnswers: string[];
}

export interface TurnChaosReport {
  seed: number;
  deployment: string;
  sessions: number;
  turns: number;
  kills: number;
  /** Turns whose owner a kill hit while they ran. */
  turnsCaught: number;
  /** Host processes that died without being killed. */
  hostCrashes: number;
  statuses: Record<string, number>;
  resumed: Record<string, number>;
  approvals: {
    requested: number;
    accepted: number;
    denied: number;
    afterOwnerDied: number;
    /** Approvals a `permission_requested` asked for again after their answer was accepted. */
    askedAgain: number;
    /** Answers given again (to a request seen again on the stream or in a snapshot) by what the host said: `200` means it was waiting for the answer once more. */
    answeredAgain: Record<string, number>;
    foundByPoll: number;
  };
  cancels: Record<string, number>;
  ledger: { lines: number; duplicates: number };
  streams: { connections: number; snapshotRequired: number; replays: number; refused: Record<string, number> };
  client: ClientStats;
  modelCalls: number;
  elapsedMs: number;
  problems: string[];
  /** Where the hosts' output was left when the run found problems. */
  logs: string | null;
}

/** The config file every host loads. */
const CONFIG = path.join(import.meta.dirname, 'chaos-host-config.ts');

interface FleetHost {
  index: number;
  process: HostProcess | null;
  /** Every process this slot ran, for the logs. */
  outputs: string[];
}

/** The host processes of a run, by slot: each slot is one machine, its process killed and started again. */
class Fleet {
  readonly slots: FleetHost[];
  /** Host processes that ended without being killed (a crash of the host itself), each with the end of its output. */
  readonly crashes: string[] = [];
  /** How each host process ended, by pid: killed by the run (and when), or on its own. */
  readonly ends = new Map<number, { at: number; how: string }>();
  private closing = false;

  constructor(
    count: number,
    private readonly argsOf: (index: number) => string[],
    private readonly env: Record<string, string>,
  ) {
    this.slots = Array.from({ length: count }, (_, index) => ({ index, process: null, outputs: [] }));
  }

  urls(): string[] {
    return this.slots.flatMap((slot) => (slot.process ? [slot.process.url] : []));
  }

  async start(index: number): Promise<void> {
    const slot = this.slots[index]!;
    const host = await spawnHost(this.argsOf(index), this.env);
    slot.process = host;
    // A host that dies on its own is a finding of the run: it is said, and the machine starts it again so the run goes on.
    void host.exited.then(async (code) => {
      if (slot.process !== host || this.closing) return;
      slot.process = null;
      slot.outputs.push(host.output());
      this.ends.set(host.child.pid!, { at: Date.now(), how: 'exited on its own' });
      this.crashes.push(`host ${index} (pid ${host.child.pid}) exited on its own (${code}):\n${host.output().slice(-2_000)}`);
      await this.start(index).catch((error: unknown) => this.crashes.push(`host ${index} could not be started again: ${String(error)}`));
    });
  }

  async kill(index: number): Promise<void> {
    const slot = this.slots[index]!;
    const host = slot.process!;
    // Off the list first: no request is sent to a host that is going.
    slot.process = null;
    this.ends.set(host.child.pid!, { at: Date.now(), how: this.closing ? 'stopped at the end' : 'SIGKILLed' });
    host.kill('SIGKILL');
    await host.exited;
    slot.outputs.push(host.output());
  }

  indexOfPid(pid: number): number | undefined {
    return this.slots.find((slot) => slot.process?.child.pid === pid)?.index;
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.slots.map(async (slot) => (slot.process ? this.kill(slot.index) : undefined)));
  }
}

/** Where each session's lease is held: `sessionId → pid` of its owner process. */
type OwnerLookup = (sessionIds: string[]) => Promise<Map<string, number>>;

export async function runTurnChaos(options: TurnChaosOptions): Promise<TurnChaosReport> {
  const started = Date.now();
  const random = seeded(options.seed);
  const between = ([min, max]: [number, number]) => min + random() * (max - min);
  const dir = await mkdtemp(path.join(tmpdir(), 'turnchart-turn-chaos-'));
  const ledgerFile = path.join(dir, 'ledger.jsonl');
  await writeFile(ledgerFile, '');
  const model = await startChaosModelServer({ random: seeded(options.seed ^ 0x5eed), chunkGapMs: options.chunkGapMs, toolHoldMs: options.toolHoldMs });
  const common = [
    '--config', CONFIG,
    '--workspace', dir,
    '--model', `openai-compatible:${model.baseUrl}#chaos`,
    '--permission-mode', 'ask',
    '--lease-ttl', String(options.leaseTtl),
    '--stall-timeout', '60',
  ];
  const database = options.deployment.kind === 'cluster' ? await privateDatabase(options.deployment.databaseUrl) : null;
  const deployment = options.deployment;
  const fleet =
    deployment.kind === 'cluster'
      ? new Fleet(
          deployment.hosts,
          (i) => [...common, '--database-url', database!.url, '--amqp-url', deployment.amqpUrl, '--owner-host', `h${i}.chaos.test`, '--route-timeout', '5'],
          { TURNCHART_CHAOS_LEDGER: ledgerFile },
        )
      : new Fleet(1, () => [...common, '--db', path.join(dir, 'chaos.db')], { TURNCHART_CHAOS_LEDGER: ledgerFile });
  const owners: OwnerLookup = database ? (ids) => database.owners(ids) : async (ids) => new Map(ids.map((id) => [id, fleet.slots[0]!.process?.child.pid ?? -1]));

  const stop = new AbortController();
  const client = new RoundRobin(() => fleet.urls(), stop.signal);
  const turns: TurnRecord[] = [];
  const approvals = new Map<string, ApprovalRecord>();
  const followers: Follower[] = [];
  const problems: string[] = [];
  let foundByPoll = 0;
  let killsDone = 0;
  /** The turn each session is running now, for the kills to mark. */
  const running = new Map<string, TurnRecord>();
  /** Approvals waiting for the user's answer, by session. */
  const unanswered = new Map<string, Set<ApprovalRecord>>();
  let logs: string | null = null;

  try {
    for (let i = 0; i < fleet.slots.length; i++) await fleet.start(i);

    // Each session's plan is drawn up front, in order, so the seed fixes it whatever the timing.
    const plans = Array.from({ length: options.sessions }, (_, s) => {
      const count = Math.round(between([options.turnsPerSession[0], options.turnsPerSession[1]]));
      return {
        startAfterMs: (s * options.startSpreadMs) / options.sessions,
        turns: Array.from({ length: count }, (_, t) => {
          const steps = 1 + Math.floor(random() * 5);
          const approval = random() < options.approvalShare;
          return {
            tag: `s${s}t${t}`,
            steps,
            approveAt: approval ? 1 + Math.floor(random() * steps) : 0,
            deny: approval && random() < options.denyShare,
            cancelAfterMs: random() < options.cancelShare ? between([200, 2_500]) : null,
          };
        }),
        answerDelays: Array.from({ length: 12 }, () => (random() < options.slowAnswerShare ? between([options.answerDelayMs[1], options.slowAnswerMs]) : between(options.answerDelayMs))),
      };
    });
    const killPlan = Array.from({ length: options.kills }, () => ({ gapMs: between(options.killGapMs), pick: random(), restartAfterMs: random() * options.leaseTtl * 1000 }));

    const drivers = plans.map(async (plan) => {
      await pause(plan.startAfterMs, stop.signal);
      let answerIndex = 0;
      const nextAnswerDelay = () => plan.answerDelays[answerIndex++ % plan.answerDelays.length]!;
      const created = await client.request('POST', '/sessions', { permissionMode: 'ask' });
      if (created.status !== 201) throw new Error(`POST /sessions answered ${created.status}: ${JSON.stringify(created.body)}`);
      const sessionId = created.body.sessionId as string;
      const answering: Promise<void>[] = [];
      /** The session's turn now: one at a time, so an approval of the session is this turn's. */
      let current: TurnRecord | null = null;

      const ask = (turnId: string, toolCallId: string, via: ApprovalRecord['seenVia']) => {
        const known = approvals.get(toolCallId);
        if (known) {
          // Pending again after an accepted answer: a user would answer again. Only a new request on
          // the stream counts as asked again — a snapshot may predate the answer.
          if (known.answer !== 'accepted' && known.answer !== 'ambiguous') return;
          if (via === 'stream') known.askedAgain += 1;
          answering.push(answer(known, 50));
          return;
        }
        if (via === 'poll') foundByPoll += 1;
        const record: ApprovalRecord = {
          sessionId,
          turnId,
          toolCallId,
          seenVia: via,
          requestedAt: Date.now(),
          // The session's turn now, even before its 202 came back (the POST may still be retrying).
          decision: current?.deny ? 'deny' : 'allow_once',
          answer: 'pending',
          ownerKilledBeforeAnswer: false,
          askedAgain: 0,
          againAnswers: [],
        };
        approvals.set(toolCallId, record);
        answering.push(answer(record, nextAnswerDelay()));
      };
      const answer = async (record: ApprovalRecord, delayMs: number) => {
        const waiting = unanswered.get(sessionId) ?? new Set();
        unanswered.set(sessionId, waiting.add(record));
        // The user's think time.
        await pause(delayMs, stop.signal);
        try {
          const reply = await client.request('POST', `/sessions/${sessionId}/turns/${record.turnId}/permissions/${record.toolCallId}`, { decision: record.decision });
          const code = (reply.body.error as { code?: string } | undefined)?.code ?? String(reply.status);
          // A second answer to one already accepted: the first stands.
          if (record.answer !== 'pending') {
            record.againAnswers.push(code);
            return;
          }
          record.answeredAt = Date.now();
          record.answer = reply.status === 200 ? 'accepted' : reply.ambiguous && reply.status === 409 ? 'ambiguous' : `refused ${code}`;
        } catch (error) {
          if (!(error instanceof GaveUp)) throw error;
          if (record.answer === 'pending') record.answer = `refused ${error.message}`;
        } finally {
          waiting.delete(record);
        }
      };

      const follower = new Follower(client, sessionId, {
        update: (envelope: StreamEnvelope) => {
          const { update } = envelope;
          if (update.type === 'permission_requested') ask(envelope.turnId, update.toolCallId as string, 'stream');
          if (update.type === 'turn_resumed') {
            const turn = turns.find((t) => t.turnId === envelope.turnId);
            turn?.resumed.push({ reason: String(update.reason), fromSequence: Number(update.fromSequence) });
          }
        },
        snapshot: (snapshot) => {
          const view = snapshot.runtime as { kind: string; turnId?: string; pendingApproval?: { toolCallId: string } | null };
          if (view.kind === 'running' && view.pendingApproval) ask(view.turnId!, view.pendingApproval.toolCallId, 'snapshot');
        },
      });
      followers.push(follower);
      follower.start();

      for (const planned of plan.turns) {
        const turn: TurnRecord = {
          tag: planned.tag,
          sessionId,
          turnId: null,
          steps: planned.steps,
          approveAt: planned.approveAt,
          deny: planned.deny,
          cancel: planned.cancelAfterMs === null ? null : { afterMs: planned.cancelAfterMs },
          status: 'unsent',
          seen: [],
          caughtBy: [],
          resumed: [],
        };
        turns.push(turn);
        current = turn;
        const posted = await client.request('POST', `/sessions/${sessionId}/turns`, {
          clientRequestId: planned.tag,
          input: [{ type: 'text', text: chaosPrompt(planned.tag, planned.steps, planned.approveAt) }],
        });
        if (posted.status !== 202) {
          turn.status = `refused ${posted.status} ${JSON.stringify(posted.body)}`;
          continue;
        }
        turn.turnId = posted.body.turnId as string;
        turn.status = 'running';
        running.set(sessionId, turn);
        const cancelling = turn.cancel ? cancelLater(turn, client, stop.signal) : Promise.resolve();
        while (turn.status === 'running' || turn.status === 'queued') {
          const state = await client.request('GET', `/sessions/${sessionId}/turns/${turn.turnId}?wait=5`, undefined, { timeoutMs: 30_000 });
          if (state.status !== 200) {
            turn.status = `unreadable ${state.status} ${JSON.stringify(state.body)}`;
            break;
          }
          turn.status = state.body.status as string;
          if (turn.seen.at(-1) !== turn.status) turn.seen.push(turn.status);
          turn.outcome = state.body.outcome as Record<string, unknown> | undefined;
          if (turn.status !== 'running') break;
          // The stream is how approvals arrive; this backs it up for one that went by between two connections.
          const snapshot = await client.request('GET', `/sessions/${sessionId}`);
          const view = (snapshot.body.runtime ?? {}) as { kind?: string; turnId?: string; pendingApproval?: { toolCallId: string } | null };
          if (snapshot.status === 200 && view.kind === 'running' && view.turnId === turn.turnId && view.pendingApproval) ask(turn.turnId, view.pendingApproval.toolCallId, 'poll');
        }
        running.delete(sessionId);
        await cancelling;
      }
      // Answers scheduled while others were waiting are awaited too.
      while (answering.length > 0) await Promise.all(answering.splice(0));
    });

    const kills = (async () => {
      for (const [k, kill] of killPlan.entries()) {
        await pause(kill.gapMs, stop.signal);
        if (stop.signal.aborted) return;
        const victim = await chooseVictim(fleet, owners, running, unanswered, kill.pick);
        const held = await owners([...new Set([...running.keys(), ...unanswered.keys()])]);
        const victimPid = fleet.slots[victim]!.process!.child.pid!;
        for (const [sessionId, pid] of held) {
          if (pid !== victimPid) continue;
          running.get(sessionId)?.caughtBy.push(k + 1);
          for (const record of unanswered.get(sessionId) ?? []) record.ownerKilledBeforeAnswer = true;
        }
        await fleet.kill(victim);
        killsDone += 1;
        // The machine comes back after a while; meanwhile (in a cluster) the others may take its sessions.
        await pause(deployment.kind === 'cluster' ? kill.restartAfterMs : 0, stop.signal);
        await fleet.start(victim);
      }
    })();

    await kills;
    const settled = await Promise.race([
      Promise.allSettled(drivers).then((results) => ({ results })),
      pause(options.settleMs, stop.signal).then(() => null),
    ]);
    if (!settled) {
      problems.push(`the sessions had not finished ${options.settleMs} ms after the last kill: ${turns.filter((t) => t.status === 'running' || t.status === 'unsent').length} turns still running or unsent`);
    } else {
      for (const result of settled.results) if (result.status === 'rejected') problems.push(`a session's driver failed: ${String(result.reason)}`);
    }
    stop.abort();
    await Promise.allSettled(drivers);
    await Promise.all(followers.map((f) => f.stop()));

    // Judged from what the hosts stored, read through a host as any client would.
    const reader = new RoundRobin(() => fleet.urls(), new AbortController().signal);
    const ledger = (await readFile(ledgerFile, 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LedgerLine);
    problems.push(...fleet.crashes);
    problems.push(...(await judge({ reader, turns, approvals, ledger, followers, ends: fleet.ends, t0: started })));
    if (problems.length > 0) logs = await keepLogs(fleet, options.seed);

    const count = <T>(items: T[], key: (item: T) => string) => items.reduce<Record<string, number>>((acc, item) => ((acc[key(item)] = (acc[key(item)] ?? 0) + 1), acc), {});
    const allApprovals = [...approvals.values()];
    const connections = followers.flatMap((f) => f.connections);
    const seenCalls = new Map<string, number>();
    for (const line of ledger) seenCalls.set(line.toolCallId, (seenCalls.get(line.toolCallId) ?? 0) + 1);
    return {
      seed: options.seed,
      deployment: deployment.kind === 'cluster' ? `${deployment.hosts} hosts on PostgreSQL + RabbitMQ` : 'one host on SQLite',
      sessions: options.sessions,
      turns: turns.length,
      kills: killsDone,
      turnsCaught: turns.filter((t) => t.caughtBy.length > 0).length,
      hostCrashes: fleet.crashes.length,
      statuses: count(turns, (t) => t.status),
      resumed: count(
        turns.flatMap((t) => t.resumed),
        (r) => r.reason,
      ),
      approvals: {
        requested: allApprovals.length,
        accepted: allApprovals.filter((a) => a.answer === 'accepted' || a.answer === 'ambiguous').length,
        denied: allApprovals.filter((a) => a.decision === 'deny').length,
        afterOwnerDied: allApprovals.filter((a) => a.ownerKilledBeforeAnswer).length,
        askedAgain: allApprovals.filter((a) => a.askedAgain > 0).length,
        answeredAgain: count(
          allApprovals.flatMap((a) => a.againAnswers),
          (code) => code,
        ),
        foundByPoll,
      },
      cancels: count(
        turns.filter((t) => t.cancel),
        (t) => t.cancel!.result ?? 'not sent',
      ),
      ledger: { lines: ledger.length, duplicates: [...seenCalls.values()].filter((n) => n > 1).length },
      streams: {
        connections: connections.length,
        snapshotRequired: connections.filter((c) => c.start === 'snapshot_required').length,
        replays: connections.filter((c) => c.start === 'replay').length,
        refused: count(
          connections.filter((c) => c.status !== 200),
          (c) => c.refusedWith ?? String(c.status),
        ),
      },
      client: client.stats,
      modelCalls: model.calls(),
      elapsedMs: Date.now() - started,
      problems,
      logs,
    };
  } finally {
    stop.abort();
    await Promise.all(followers.map((f) => f.stop()));
    await fleet.close();
    await model.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function cancelLater(turn: TurnRecord, client: RoundRobin, signal: AbortSignal): Promise<void> {
  await pause(turn.cancel!.afterMs, signal);
  if (signal.aborted) return;
  try {
    const reply = await client.request('POST', `/sessions/${turn.sessionId}/turns/${turn.turnId}/cancel`);
    const code = (reply.body.error as { code?: string } | undefined)?.code;
    turn.cancel!.result = reply.status === 200 ? 'accepted' : reply.ambiguous ? 'ambiguous' : code === 'TurnNotActive' ? 'too_late' : `${reply.status} ${code}`;
  } catch (error) {
    if (!(error instanceof GaveUp)) throw error;
    turn.cancel!.result = error.message;
  }
}

/**
 * The host to kill: drawn among those that hold a session with a turn running or an approval
 * waiting (so the kill interrupts work), or among all when none does.
 */
async function chooseVictim(
  fleet: Fleet,
  owners: OwnerLookup,
  running: Map<string, TurnRecord>,
  unanswered: Map<string, Set<ApprovalRecord>>,
  pick: number,
): Promise<number> {
  const live = fleet.slots.filter((slot) => slot.process).map((slot) => slot.index);
  const held = await owners([...new Set([...running.keys(), ...[...unanswered].filter(([, set]) => set.size > 0).map(([id]) => id)])]);
  const busy = [...new Set([...held.values()].map((pid) => fleet.indexOfPid(pid)).filter((i): i is number => i !== undefined))].sort();
  const pool = busy.length > 0 ? busy : live;
  return pool[Math.floor(pick * pool.length)]!;
}

/** A PostgreSQL database of the run's own on the test server, and the owners of its sessions. */
async function privateDatabase(serverUrl: string): Promise<{ url: string; owners: OwnerLookup; drop(): Promise<void> }> {
  const name = `tc_chaos_${randomUUID().replaceAll('-', '')}`;
  const admin = async <T>(use: (client: pg.Client) => Promise<T>, url = serverUrl): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end();
    }
  };
  await admin((client) => client.query(`create database ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    owners: (ids) =>
      admin(async (client) => {
        const { rows } = await client.query<{ id: string; owner_pid: number | null }>('select id, owner_pid from sessions where id = any($1) and owner_pid is not null', [ids]);
        return new Map(rows.map((r) => [r.id, Number(r.owner_pid)]));
      }, url.toString()),
    drop: () => admin((client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

/** The hosts' output, kept for a run that found problems. */
async function keepLogs(fleet: Fleet, seed: number): Promise<string> {
  const file = path.resolve(import.meta.dirname, `../../.turnchart/turn-chaos-${seed}-${Date.now()}.log`);
  const text = fleet.slots
    .map((slot) => [...slot.outputs, slot.process?.output() ?? ''].map((output, run) => `=== host ${slot.index}, process ${run + 1}\n${output}`).join('\n'))
    .join('\n');
  await writeFile(file, text);
  return file;
}

interface StoredMessageView {
  turnId: string;
  sequence: number;
  message: { role: string; toolCalls?: Array<{ id: string; name: string }>; toolCallId?: string; toolName?: string; status?: string; content?: string };
}

/** Every check of the run, each failure one line naming the session, turn or call. */
async function judge(run: {
  reader: RoundRobin;
  turns: TurnRecord[];
  approvals: Map<string, ApprovalRecord>;
  ledger: LedgerLine[];
  followers: Follower[];
  ends: Map<number, { at: number; how: string }>;
  /** When the run started (Date.now()): times in the problems count from it. */
  t0: number;
}): Promise<string[]> {
  const { reader, turns, approvals, ledger, followers, ends, t0 } = run;
  // When each run happened, and how its host ended: the timeline a duplicate needs.
  const runOn = (line: LedgerLine) => {
    const end = ends.get(line.pid);
    return `pid ${line.pid} at +${line.at - t0} ms${end ? ` (${end.how} at +${end.at - t0} ms)` : ''}`;
  };
  /** The hosts that ended from `from` until `to` (ms since the epoch), as a clause. */
  const endsBetween = (from: number, to: number) => {
    const list = [...ends].filter(([, end]) => end.at >= from && end.at <= to).map(([pid, end]) => `pid ${pid} ${end.how} at +${end.at - t0} ms`);
    return list.length > 0 ? `; meanwhile ${list.join(', ')}` : '';
  };
  /** An approval's timeline: asked, answered, and which hosts ended in between and until the check. */
  const timeline = (approval: ApprovalRecord) =>
    ` (asked at +${approval.requestedAt - t0} ms, answered at ${approval.answeredAt ? `+${approval.answeredAt - t0} ms` : 'never'}${endsBetween(approval.requestedAt - 2_000, (approval.answeredAt ?? Date.now()) + 5_000)})`;
  const problems: string[] = [];

  // Each turn's stored status, read again: what the client last saw may be older.
  for (const turn of turns) {
    if (!turn.turnId) {
      problems.push(`${turn.tag}: never accepted (${turn.status})`);
      continue;
    }
    const state = await reader.request('GET', `/sessions/${turn.sessionId}/turns/${turn.turnId}`);
    if (state.status === 200) {
      turn.status = state.body.status as string;
      if (turn.seen.at(-1) !== turn.status) turn.seen.push(turn.status);
      turn.outcome = state.body.outcome as Record<string, unknown> | undefined;
    }
    const terminal = turn.seen.findIndex((status) => status !== 'running' && status !== 'queued');
    if (terminal >= 0 && terminal < turn.seen.length - 1) problems.push(`${turn.tag} ${turn.turnId}: read ${turn.seen[terminal]}, later ${turn.seen.slice(terminal + 1).join(' then ')}: a terminal status changed`);
    const caught = turn.caughtBy.length > 0 ? ` (its owner killed by kill ${turn.caughtBy.join(', ')}; resumed ${turn.resumed.map((r) => r.reason).join(', ') || 'never'})` : '';
    const outcome = JSON.stringify(turn.outcome ?? {});
    const deniedEnd = turn.status === 'failed' && (turn.outcome as { code?: string } | undefined)?.code === 'permission_denied';
    if (turn.cancel) {
      // The cancel either took, or came after the turn had ended as it would have: completed, or failed on its denial.
      const uncancelled = turn.deny ? deniedEnd : turn.status === 'completed';
      if (turn.status !== 'cancelled' && !uncancelled) problems.push(`${turn.tag} ${turn.turnId}: a cancel was sent (${turn.cancel.result}); ended ${turn.status} ${outcome}${caught}`);
    } else if (turn.deny) {
      if (!deniedEnd) problems.push(`${turn.tag} ${turn.turnId}: its approval was denied; ended ${turn.status} ${outcome}${caught}`);
    } else if (turn.status !== 'completed') {
      problems.push(`${turn.tag} ${turn.turnId}: ended ${turn.status} ${outcome}${caught}`);
    } else if ((turn.outcome as { finalText?: string } | undefined)?.finalText !== `done ${turn.tag}`) {
      problems.push(`${turn.tag} ${turn.turnId}: completed with ${outcome}, not 'done ${turn.tag}'`);
    }
  }

  // No tool call ran twice: both ledger tools are not idempotent.
  const runs = new Map<string, LedgerLine[]>();
  for (const line of ledger) runs.set(line.toolCallId, [...(runs.get(line.toolCallId) ?? []), line]);
  for (const [toolCallId, lines] of runs) {
    if (lines.length > 1) {
      const approval = approvals.get(toolCallId);
      const answered = approval?.answeredAt ? `; answered ${approval.decision} at +${approval.answeredAt - t0} ms (${approval.answer})` : '';
      problems.push(`${lines[0]!.tag} ${lines[0]!.tool} ${toolCallId}: ran ${lines.length} times — ${lines.map(runOn).join(', then ')}${answered}`);
    }
  }

  // Every approval asked for in the stored conversation reached the user, was answered, and its
  // answer held: an allowed call ran once, a denied one never.
  const sessions = [...new Set(turns.map((t) => t.sessionId))];
  const cancelled = new Set(turns.filter((t) => t.cancel).map((t) => t.turnId));
  for (const sessionId of sessions) {
    const page = await reader.request('GET', `/sessions/${sessionId}/messages?limit=1000`);
    if (page.status !== 200) {
      problems.push(`${sessionId}: messages unreadable (${page.status})`);
      continue;
    }
    const messages = page.body.messages as StoredMessageView[];
    const createdAt = (m: StoredMessageView) => (m as { createdAtMs?: number }).createdAtMs ?? 0;
    const results = new Map(messages.filter((m) => m.message.role === 'tool').map((m) => [m.message.toolCallId!, m.message]));
    for (const m of messages) {
      for (const call of m.message.role === 'assistant' ? (m.message.toolCalls ?? []) : []) {
        const ran = runs.get(call.id)?.length ?? 0;
        const result = results.get(call.id);
        if (call.name !== 'ledger_approved') continue;
        const approval = approvals.get(call.id);
        const where = `${sessionId} ${m.turnId} ${call.id}`;
        if (!approval) {
          if (!cancelled.has(m.turnId)) {
            problems.push(
              `${where}: an approval call the user was never asked about (stored at +${createdAt(m) - t0} ms${endsBetween(createdAt(m) - 1_000, createdAt(m) + 10_000)}; result ${result?.status ?? 'none'}: ${result?.content ?? ''}; ran ${ran} times)`,
            );
          }
          continue;
        }
        if (approval.answer !== 'accepted' && approval.answer !== 'ambiguous') {
          if (!cancelled.has(m.turnId)) {
            problems.push(`${where}: approval lost — the answer was ${approval.answer}${approval.ownerKilledBeforeAnswer ? ', its owner killed before it' : ''}${timeline(approval)}; result ${result?.status ?? 'none'}`);
          }
          continue;
        }
        // An allowed call whose host died after it stored its start may not have run: it gets the interrupted result, never a second run.
        const startedThenCut = ran === 0 && result?.content === INTERRUPTED_RESULT_TEXT;
        if (approval.decision === 'allow_once' && ran !== 1 && !startedThenCut && !cancelled.has(m.turnId)) {
          const runsThere = (runs.get(call.id) ?? []).map(runOn).join(', then ');
          problems.push(
            `${where}: allowed${approval.ownerKilledBeforeAnswer ? ' after its owner was killed' : ''}${timeline(approval)}, ran ${ran} times${runsThere ? ` (${runsThere})` : ''}; result ${result?.status ?? 'none'}: ${result?.content ?? ''}`,
          );
        }
        if (approval.decision === 'deny' && (ran !== 0 || (result && result.status !== 'denied'))) problems.push(`${where}: denied, ran ${ran} times; result ${result?.status ?? 'none'}`);
      }
    }
  }
  for (const line of ledger) {
    if (line.tool !== 'ledger_approved') continue;
    const approval = approvals.get(line.toolCallId);
    if (!approval || approval.decision !== 'allow_once') problems.push(`${line.tag} ${line.toolCallId}: ran without an allow (${approval ? approval.decision : 'never asked'})`);
  }

  // Every stream ran on without a gap, or said `snapshot_required`.
  for (const follower of followers) problems.push(...follower.problems);
  return problems;
}
