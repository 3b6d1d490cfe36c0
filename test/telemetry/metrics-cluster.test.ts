import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterOf } from '../../src/cluster/cluster.js';
import { commandQueueOf } from '../../src/cluster/names.js';
import { clusterSkipReason } from '../support/cluster-hosts.js';
import { postgresSchema, POSTGRES_URL, type DurableDatabase } from '../support/databases.js';
import { newSession, testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { parsePrometheusText, samplesOf, valueOf, type Exposition } from '../support/prometheus-text.js';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * The cluster's metrics (issue 27) on a host of PostgreSQL and RabbitMQ, its broker reached through a
 * TCP proxy the test can cut: routed commands by result (owners the test plays on the broker), the
 * broker link's reconnects, and a session taken from an owner whose lease ran out.
 */
describe.skipIf(clusterSkipReason !== null)('cluster metrics of a host (issue 27)', () => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  let proxy: TcpProxy | undefined;
  let broker: ChannelModel | undefined;
  afterEach(async () => {
    await broker?.close();
    await host?.close();
    await proxy?.close();
    await db?.drop();
    broker = host = proxy = db = undefined;
  });

  async function scrape(h: TestHost): Promise<Exposition> {
    const response = await fetch(`${h.url}/metrics`);
    expect(response.status).toBe(200);
    return parsePrometheusText(await response.text());
  }

  /** A session of the host, closed there and then held by an owner that exists only on paper, for `ttlMs`. */
  async function heldByAStranger(h: TestHost, ownerId: string, ttlMs = 60_000): Promise<string> {
    const sessionId = await newSession(h);
    await h.runtime.openHandle(sessionId)!.close();
    expect((await h.storage.acquireSession(sessionId, { ownerId, host: 'elsewhere.example', pid: 4242, ttlMs }, 0)).ok).toBe(true);
    return sessionId;
  }

  it('counts routed commands by result, broker reconnects and lease takeovers', async () => {
    const amqp = new URL(process.env.TEST_AMQP_URL!);
    proxy = await tcpProxy(amqp.hostname, Number(amqp.port || 5672));
    const proxied = new URL(amqp);
    proxied.port = String(proxy.port);
    db = postgresSchema(POSTGRES_URL!);
    host = await testHost(db, [], { cluster: clusterOf({ amqpUrl: proxied.toString(), routeTimeoutMs: 300 }) });
    const before = await scrape(host);
    // Every result is there from the first scrape, at 0.
    expect(samplesOf(before, 'turnchart_routed_commands_total').map((s) => [s.labels.result, s.value])).toHaveLength(5);
    expect(valueOf(before, 'turnchart_routed_commands_total')).toBe(0);
    expect(valueOf(before, 'turnchart_broker_reconnects_total')).toBe(0);

    // An owner with no queue, one that never answers, one that answers garbage.
    broker = await connect(process.env.TEST_AMQP_URL!);
    const channel = await broker.createChannel();
    for (const [owner, reply] of [['owner_silent', null], ['owner_garbled', 'not json']] as const) {
      await channel.assertQueue(commandQueueOf(owner), { exclusive: true, autoDelete: true, durable: false });
      await channel.consume(
        commandQueueOf(owner),
        (message: ConsumeMessage | null) => {
          if (message && reply) channel.sendToQueue(message.properties.replyTo as string, Buffer.from(reply), { correlationId: message.properties.correlationId as string });
        },
        { noAck: true },
      );
    }
    const gone = await heldByAStranger(host, 'owner_gone');
    const silent = await heldByAStranger(host, 'owner_silent');
    const garbled = await heldByAStranger(host, 'owner_garbled');
    expect((await host.call('GET', `/sessions/${gone}`)).status).toBe(503);
    expect((await host.call('GET', `/sessions/${silent}`)).status).toBe(504);
    expect((await host.call('GET', `/sessions/${garbled}`)).status).toBe(500);
    const routed = await scrape(host);
    expect(Object.fromEntries(samplesOf(routed, 'turnchart_routed_commands_total').map((s) => [s.labels.result, s.value]))).toEqual({
      answered: 0,
      owner_unavailable: 1,
      owner_timeout: 1,
      transport_unavailable: 0,
      unreadable_reply: 1,
    });
    // The owners' ids are no label values.
    expect(routed.samples.flatMap((s) => Object.values(s.labels)).filter((v) => v.startsWith('owner_') && !/^owner_(unavailable|timeout)$/.test(v))).toEqual([]);

    // The network to the broker goes and comes back: one reconnect.
    await proxy.cut();
    await proxy.restore();
    // The link reconnects on its own backoff; nothing tells the test when but the metric itself.
    await until('the broker link to reconnect', async () => valueOf(await scrape(host!), 'turnchart_broker_reconnects_total') === 1);

    // A session whose owner stopped renewing its lease: opened here by taking it over.
    const abandoned = await heldByAStranger(host, 'owner_dead', 200);
    await until('the stranger\'s lease to run out', async () => (await host!.storage.sessionStanding(abandoned))?.holder === null);
    expect((await host.call('GET', `/sessions/${abandoned}`)).status).toBe(200);
    expect(valueOf(await scrape(host), 'turnchart_lease_takeovers_total')).toBe(1);
  });
});
