import type { Runtime } from '../runtime/runtime.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { CLOSED_MESSAGE, sessionKeyOf, UPDATE_MESSAGE, UPDATES_EXCHANGE } from './names.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * The owner's side of remote event streams: every update of every session this host holds goes to
 * the updates exchange under its session's key, in the order the session issued it (one channel,
 * published in order), and a session closing here says so, so streams on other hosts end and their
 * clients resume wherever the session is next. Unbound keys cost the broker nothing to drop.
 * Resolves with a function that stops publishing and waits for what is still unconfirmed.
 */
export async function publishUpdates(link: AmqpLink, runtime: Runtime, warn: (message: string) => void): Promise<() => Promise<void>> {
  await link.onChannel(async (channel) => {
    await channel.assertExchange(UPDATES_EXCHANGE, 'topic', { durable: true });
  });
  const unconfirmed = new Set<Promise<void>>();
  let failures = 0;
  const publish = (sessionId: string, body: unknown, type: string) => {
    const sent = link.publish(UPDATES_EXCHANGE, sessionKeyOf(sessionId), body, { persistent: false, type }).catch((error: unknown) => {
      // A follower that misses an update sees the gap and resumes from the owner's replay; one warning a burst is enough.
      if (failures++ === 0) warn(`could not publish session updates to the cluster: ${messageOf(error)}`);
    });
    unconfirmed.add(sent);
    void sent.finally(() => {
      unconfirmed.delete(sent);
      if (unconfirmed.size === 0) failures = 0;
    });
  };
  const updates = runtime.updates$.subscribe((envelope) => publish(envelope.sessionId, envelope, UPDATE_MESSAGE));
  const closes = runtime.sessionClosed$.subscribe((sessionId) => publish(sessionId, { sessionId }, CLOSED_MESSAGE));
  return async () => {
    updates.unsubscribe();
    closes.unsubscribe();
    await Promise.all([...unconfirmed]);
  };
}
