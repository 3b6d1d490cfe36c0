/**
 * What routing costs: the same request answered by the session's owner (local) and by another host
 * of the cluster that routes it through RabbitMQ (routed), two in-process hosts on one PostgreSQL
 * schema and the local broker. Both sides run back to back in each round, so the per-round ratio
 * cancels this machine's drift. Skipped, with the reason, when PostgreSQL or RabbitMQ do not answer.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'amqplib';
import pg from 'pg';
import { startHost, type RunningHost } from '../src/host/host.js';
import { postgresStorage, scriptedModel } from '../src/index.js';
import { median } from './common.js';

export interface ClusterRoutingResult {
  requestsPerRound: number;
  localUs: { median: number; samples: number[] };
  routedUs: { median: number; samples: number[] };
  /** Median of the per-round routed ÷ local ratios. */
  ratio: number;
}

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export async function measureClusterRouting(options: { requests: number; warmupRounds: number; rounds: number }): Promise<ClusterRoutingResult | { skipped: string }> {
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
          model: scriptedModel([{ text: 'done' }]),
          cluster: { amqpUrl: AMQP_URL },
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
    const local: number[] = [];
    const routed: number[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < options.warmupRounds + options.rounds; round++) {
      const l = await perRequestUs(owner.url, path, options.requests);
      const r = await perRequestUs(router.url, path, options.requests);
      if (round < options.warmupRounds) continue;
      local.push(l);
      routed.push(r);
      ratios.push(r / l);
    }
    return { requestsPerRound: options.requests, localUs: { median: median(local), samples: local }, routedUs: { median: median(routed), samples: routed }, ratio: median(ratios) };
  } finally {
    for (const host of hosts) await host.close();
    await rm(workspace, { recursive: true, force: true });
    await dropSchema(schema);
  }
}

/** Median µs of `count` sequential GETs. */
async function perRequestUs(base: string, path: string, count: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const response = await fetch(base + path);
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
    samples.push((performance.now() - start) * 1000);
  }
  return median(samples);
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
    return `no PostgreSQL at ${DATABASE_URL}: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
  try {
    await (await connect(AMQP_URL, { timeout: 2_000 })).close();
  } catch (error) {
    return `no RabbitMQ at ${AMQP_URL.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}: ${error instanceof Error ? error.message : String(error)}`;
  }
  return null;
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}
