import { randomUUID } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { AmqpLink } from '../../src/transport/amqp-link.js';
import { TurnchartError } from '../../src/protocol/errors.js';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/poll.js';

const url = process.env.TEST_AMQP_URL;
const broker = url ? new URL(url) : null;

describe.skipIf(!url)('AmqpLink on a real RabbitMQ (TEST_AMQP_URL)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function linkThrough(proxy: TcpProxy | null): Promise<AmqpLink> {
    const target = new URL(url!);
    if (proxy) target.port = String(proxy.port);
    const link = await AmqpLink.open({ url: target.toString(), name: 'test', warn: () => undefined, reconnect: { minMs: 10, maxMs: 50 } });
    cleanups.push(() => link.close());
    return link;
  }

  /** A queue of its own, consumed on every channel the link opens; bodies land in `received`. */
  async function consumeInto(link: AmqpLink, queue: string, received: unknown[]): Promise<void> {
    await link.onChannel(async (channel) => {
      await channel.assertQueue(queue, { durable: false, autoDelete: false });
      await channel.consume(queue, (message: ConsumeMessage | null) => {
        if (!message) return;
        received.push(JSON.parse(message.content.toString()));
        channel.ack(message);
      });
    });
    cleanups.push(async () => {
      const admin = await AmqpLink.open({ url: url!, name: 'cleanup', warn: () => undefined });
      await admin.channel!.deleteQueue(queue);
      await admin.close();
    });
  }

  it('publishes with the broker’s confirm and delivers to a consumer', async () => {
    const link = await linkThrough(null);
    const queue = `tc-test-${randomUUID()}`;
    const received: unknown[] = [];
    await consumeInto(link, queue, received);
    await link.publish('', queue, { n: 1 });
    await link.publish('', queue, { n: 2 });
    await until('both messages', () => received.length === 2);
    expect(received).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('reconnects after the network drops, sets its channel up again, and publishes what was sent meanwhile', async () => {
    const proxy = await tcpProxy(broker!.hostname, Number(broker!.port || 5672));
    cleanups.push(() => proxy.close());
    const link = await linkThrough(proxy);
    const queue = `tc-test-${randomUUID()}`;
    const received: unknown[] = [];
    await consumeInto(link, queue, received);
    await link.publish('', queue, { before: true });
    await until('the first message', () => received.length === 1);

    await proxy.cut();
    await until('the link to notice', () => link.channel === null);
    const during = link.publish('', queue, { during: true });
    await proxy.restore();
    await during;
    await until('the message sent while cut', () => received.some((body) => JSON.stringify(body) === '{"during":true}'));
    // At least once: an ack in flight when the network went is lost, and the broker delivers that message again.
    expect(new Set(received.map((body) => JSON.stringify(body)))).toEqual(new Set(['{"before":true}', '{"during":true}']));
  });

  it('sends the acknowledgements made just before close: nothing acknowledged is delivered again', async () => {
    const queue = `tc-test-${randomUUID()}`;
    const first = await AmqpLink.open({ url: url!, name: 'test', warn: () => undefined });
    const received: number[] = [];
    await first.onChannel(async (channel) => {
      await channel.assertQueue(queue, { durable: true });
      await channel.prefetch(100);
      await channel.consume(queue, (message) => {
        if (!message) return;
        received.push(Number(message.content.toString()));
        channel.ack(message);
      });
    });
    cleanups.push(async () => {
      const admin = await AmqpLink.open({ url: url!, name: 'cleanup', warn: () => undefined });
      await admin.channel!.deleteQueue(queue);
      await admin.close();
    });
    for (let n = 1; n <= 50; n++) await first.publish('', queue, n);
    await until('all fifty', () => received.length === 50);
    await first.close();
    const admin = await AmqpLink.open({ url: url!, name: 'check', warn: () => undefined });
    cleanups.push(() => admin.close());
    expect((await admin.channel!.checkQueue(queue)).messageCount).toBe(0);
  });

  it('answers an unreachable broker with a typed error that hides the password', async () => {
    const error = await AmqpLink.open({ url: 'amqp://guest:secret@127.0.0.1:1', name: 'test', warn: () => undefined }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TurnchartError);
    expect((error as TurnchartError).code).toBe('TransportUnavailable');
    expect((error as TurnchartError).message).not.toContain('secret');
  });
});
