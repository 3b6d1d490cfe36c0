import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dropPostgresSchema, POSTGRES_URL } from './databases.js';
import { spawnHost, type HostProcess } from './host-process.js';
import { SseClient, type Envelope } from './sse-client.js';

/** Why the cluster suites cannot run here, or null when a PostgreSQL server and a RabbitMQ broker both answer. */
export const clusterSkipReason: string | null = !POSTGRES_URL
  ? 'no PostgreSQL server (TEST_DATABASE_URL)'
  : !process.env.TEST_AMQP_URL
    ? 'no RabbitMQ broker (TEST_AMQP_URL)'
    : null;

if (clusterSkipReason) console.log(`cluster suites: skipped — ${clusterSkipReason}`);

/** One PostgreSQL schema the hosts of a test share, and how to drop it. */
export function clusterDatabase(): { url: string; drop(): Promise<void> } {
  const schema = `tc_cl_${randomUUID().replaceAll('-', '')}`;
  const url = new URL(POSTGRES_URL!);
  url.searchParams.set('schema', schema);
  return { url: url.toString(), drop: () => dropPostgresSchema(POSTGRES_URL!, schema) };
}

/** A `turnchart serve` process in the cluster, as an operator starts one per machine (`--owner-host` names the machine). */
export async function clusterHost(options: {
  databaseUrl: string;
  workspace: string;
  name: string;
  /** The scripted model's replies, one per model call this host makes. */
  replies: unknown[];
  extra?: string[];
}): Promise<HostProcess> {
  const script = path.join(options.workspace, `${options.name}-model.json`);
  await writeFile(script, JSON.stringify(options.replies));
  return spawnHost([
    '--database-url',
    options.databaseUrl,
    '--amqp-url',
    process.env.TEST_AMQP_URL!,
    '--workspace',
    options.workspace,
    '--model',
    `scripted:${script}`,
    '--owner-host',
    `${options.name}.cluster.test`,
    ...(options.extra ?? []),
  ]);
}

/** An event stream of a session on one host; `lastEventId` resumes. */
export function streamOf(url: string, sessionId: string, lastEventId?: number): Promise<SseClient> {
  return SseClient.connect(`${url}/sessions/${sessionId}/events`, lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) });
}

/** The sequences of a client's envelopes, which must run on without a gap or a repeat. */
export function sequencesOf(updates: Envelope[]): number[] {
  return updates.map((u) => u.sequence);
}

/** `count` numbers from `first` on, one apart: what a gap-free, duplicate-free stream's sequences are. */
export function run(first: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => first + i);
}
