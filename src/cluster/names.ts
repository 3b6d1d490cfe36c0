/** Where hosts of one cluster meet on the broker. */

/** The topic exchange every owner publishes its sessions' updates to, routed by session. */
export const UPDATES_EXCHANGE = 'turnchart.updates';

const COMMAND_QUEUE_PREFIX = 'turnchart.host.';

/** The exclusive queue a host takes commands for its sessions on, named by its owner id (the sessions row names it). */
export function commandQueueOf(ownerId: string): string {
  return `${COMMAND_QUEUE_PREFIX}${ownerId}`;
}

/** The owner whose command queue this is (a returned message names the queue it was sent to), or null. */
export function ownerOfCommandQueue(queue: string): string | null {
  return queue.startsWith(COMMAND_QUEUE_PREFIX) && queue.length > COMMAND_QUEUE_PREFIX.length ? queue.slice(COMMAND_QUEUE_PREFIX.length) : null;
}

/**
 * Message type (`type` property) of a probe: sent, mandatory, to an owner's command queue only to
 * learn whether the queue is still there (the broker returns it when not); owners drop it unread.
 */
export const PROBE_MESSAGE = 'probe';

/** The routing key of one session's updates. */
export function sessionKeyOf(sessionId: string): string {
  return `session.${sessionId}`;
}

/** Message types (`type` property) on the updates exchange. */
export const UPDATE_MESSAGE = 'update';
export const CLOSED_MESSAGE = 'closed';
