/** Where hosts of one cluster meet on the broker. */

/** The topic exchange every owner publishes its sessions' updates to, routed by session. */
export const UPDATES_EXCHANGE = 'turnchart.updates';

/** The exclusive queue a host takes commands for its sessions on, named by its owner id (the sessions row names it). */
export function commandQueueOf(ownerId: string): string {
  return `turnchart.host.${ownerId}`;
}

/** The routing key of one session's updates. */
export function sessionKeyOf(sessionId: string): string {
  return `session.${sessionId}`;
}

/** Message types (`type` property) on the updates exchange. */
export const UPDATE_MESSAGE = 'update';
export const CLOSED_MESSAGE = 'closed';
