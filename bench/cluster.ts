/**
 * What routing costs: the same request answered by the session's owner (local) and by another host
 * of the cluster that routes it through RabbitMQ (routed), two in-process hosts on one PostgreSQL
 * schema and the local broker. Two requests: a GET of a finished turn (one routed command), and
 * `POST /api/chat` sending a finished turn's message again (its tap on the updates exchange, the
 * routed submit, snapshot and turn state, then the replay from the shared database). Both sides run
 * back to back in each round, so the per-round ratio cancels this machine's drift. Skipped, with the
 * reason, when PostgreSQL or RabbitMQ do not answer.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'amqplib';
import pg from 'pg';
import { clusterOf } from '../src/cluster/cluster.js';
import { startHost, type RunningHost } from '../src/host/host.js';
import { postgresStorage, scriptedModel } from '../src/index.js';
import { dropPostgresSchema } from '../storage/postgres.js';
import { median } from './common.js';
import { messageOf } from '../src/protocol/error-message.js';

export interface RoutingFigure {
  requestsPerRound: number;
  localUs: { median: number; samples: number[] };
  routedUs: { median: number; samples: number[] };
  /** Median of the per-round routed ÷ local ratios. */
  ratio: number;
}

export interface ClusterRoutingResult extends RoutingFigure {
  /** `POST /api/chat` with a finished turn's message sent again. */
  chat: RoutingFigure;
}

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

interface RoundOptions {
  requests: number;
  warmupRounds: number;
  rounds: number;
}

export async function measureClusterRouting(options: RoundOptions & { chatRequests: number }): Promise<ClusterRoutingResult | { skipped: string }> {
  const missing = await unavailable();
  if (missing) return { skipped: missing };
  const schema = `tc_bench_${randomUUID().replaceAll('-', '')}`;
  const workspace = await mkdtemp(join(tmpdir(), 'turnchart-bench-cluster-'));
  const hosts: RunningHost[] = [];
  try {
    for (const name of ['a', 'b']) {
      hosts.push(
        await startHost({
          host: '127.0.0.1',
          port: 0,
          idleTtlSeconds: 300,
          workspace,
          storage: postgresStorage({ connectionString: DATABASE_URL, schema }),
          model: scriptedModel([{ text: 'done' }, { text: 'chatted' }]),
          cluster: clusterOf({ amqpUrl: AMQP_URL }),
          runtime: { ownership: { host: `${name}.bench` } },
          warn: () => undefined,
        }),
      );
    }
    const [owner, router] = hosts as [RunningHost, RunningHost];
    const sessionId = (await json(owner.url, 'POST', '/sessions', {})).sessionId as string;
    const turnId = (await json(owner.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r', input: [{ type: 'text', text: 'go' }] })).turnId as string;
    await json(owner.url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
    const path = `/sessions/${sessionId}/turns/${turnId}`;
    const urls = [owner.url, router.url] as const;
    const get = await figure(urls, options, options.requests, (base) => getTurn(base, path));
    // The chat's first message runs its turn on the owner; every request after sends it again.
    const chat = { id: 'bench-chat', trigger: 'submit-message', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'go' }] }] };
    await postChat(owner.url, chat);
    return { ...get, chat: await figure(urls, options, options.chatRequests, (base) => postChat(base, chat)) };
  } finally {
    for (const host of hosts) await host.close();
    await rm(workspace, { recursive: true, force: true });
    await dropPostgresSchema(DATABASE_URL, schema);
  }
}

/** Rounds of `count` requests on the owner (the first host), then on the other: per-request medians and their ratio. */
async function figure(
  [owner, router]: readonly [string, string],
  options: RoundOptions,
  count: number,
  request: (base: string) => Promise<void>,
): Promise<RoutingFigure> {
  const local: number[] = [];
  const routed: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < options.warmupRounds + options.rounds; round++) {
    const l = await perRequestUs(owner, count, request);
    const r = await perRequestUs(router, count, request);
    if (round < options.warmupRounds) continue;
    local.push(l);
    routed.push(r);
    ratios.push(r / l);
  }
  return { requestsPerRound: count, localUs: { median: median(local), samples: local }, routedUs: { median: median(routed), samples: routed }, ratio: median(ratios) };
}

/** Median µs of `count` sequential requests. */
async function perRequestUs(base: string, count: number, request: (base: string) => Promise<void>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await request(base);
    samples.push((performance.now() - start) * 1000);
  }
  return median(samples);
}

async function getTurn(base: string, path: string): Promise<void> {
  const response = await fetch(base + path);
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
}

/** The whole UI message stream of one `POST /api/chat`, which must end with the turn's `finish`. */
async function postChat(base: string, body: unknown): Promise<void> {
  const response = await fetch(`${base}/api/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200 || !text.includes('"type":"finish"')) throw new Error(`POST /api/chat answered ${response.status}: ${text.slice(0, 300)}`);
}

async function json(base: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(base + path, {
    method,
    ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function unavailable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  try {
    await client.connect();
  } catch (error) {
    return `no PostgreSQL at ${DATABASE_URL}: ${messageOf(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
  try {
    await (await connect(AMQP_URL, { timeout: 2_000 })).close();
  } catch (error) {
    return `no RabbitMQ at ${AMQP_URL.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}: ${messageOf(error)}`;
  }
  return null;
}

