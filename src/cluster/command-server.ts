import type { ConsumeMessage } from 'amqplib';
import type { AmqpLink } from '../transport/amqp-link.js';
import { parseBody, type CommandReply } from './messages.js';
import { commandQueueOf, PROBE_MESSAGE } from './names.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * Takes commands routed to this host on its exclusive queue and replies to each on its `replyTo`
 * with its `correlationId`. Commands run concurrently (a `?wait` holds its reply for up to a
 * minute); without acknowledgements, a command this host dies under is lost and its caller times out.
 */
export async function serveCommands(
  link: AmqpLink,
  ownerId: string,
  answer: (body: unknown) => Promise<CommandReply>,
  warn: (message: string) => void,
): Promise<void> {
  const queue = commandQueueOf(ownerId);
  const handle = async (message: ConsumeMessage): Promise<void> => {
    const { correlationId, replyTo, type } = message.properties as { correlationId?: unknown; replyTo?: unknown; type?: unknown };
    // A probe only checks this queue is there (rpc-client.ts); it carries no command and wants no reply.
    if (type === PROBE_MESSAGE || typeof correlationId !== 'string' || typeof replyTo !== 'string') return;
    const reply = await answer(parseBody(message.content));
    await link.publish('', replyTo, reply, { correlationId, persistent: false }).catch((error: unknown) => {
      warn(`could not reply to a routed command: ${messageOf(error)}`);
    });
  };
  await link.onChannel(async (channel) => {
    await channel.assertQueue(queue, { exclusive: true, autoDelete: true, durable: false });
    await channel.consume(queue, (message) => void (message && handle(message)), { noAck: true });
  });
}
