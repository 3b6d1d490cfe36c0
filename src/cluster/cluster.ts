import type { ClusterMembership, HostCluster, HostContext } from '../host/host-context.js';
import { AmqpLink } from '../transport/amqp-link.js';
import { serveCommands } from './command-server.js';
import { sweepExpiredLeases } from './lease-sweep.js';
import { answerCommand } from './owner-commands.js';
import { RemoteSession } from './remote-session.js';
import { RpcClient } from './rpc-client.js';
import { publishUpdates } from './update-fanout.js';
import { UpdateFollower } from './update-follower.js';
import { withDeadline } from '../util/deadline.js';

export interface ClusterOptions {
  /** The broker every host of the cluster uses: `amqp://user:pass@host:port/vhost`. */
  amqpUrl: string;
  /** How long a routed command may take before it answers `OwnerTimeout` (plus the wait it asks for). */
  routeTimeoutMs?: number;
}

const DEFAULT_ROUTE_TIMEOUT_MS = 15_000;

/**
 * The cluster a host joins when it starts (`startHost({ cluster: clusterOf({ amqpUrl }) })`). The
 * cluster sits beside the host and reaches its sessions through the host's seam (`SessionAccess`,
 * `HostContext`); the host knows a cluster only as this join.
 */
export function clusterOf(options: ClusterOptions): HostCluster {
  return { secrets: [options.amqpUrl], join: (host, leaseTtlMs) => joinCluster(host, options, leaseTtlMs) };
}

/**
 * Joins the cluster: one broker connection for routed commands (served on this host's queue, sent to
 * other hosts'), update fan-out for the sessions held here, remote event streams for sessions held
 * elsewhere, and the sweep that corrects what dead hosts left. `leaseTtlMs` paces the sweep (once a
 * lease) and the check that followed owners still hold their sessions (three times a lease).
 */
async function joinCluster(host: HostContext, options: ClusterOptions, leaseTtlMs: number): Promise<ClusterMembership> {
  const { ownerId } = host.runtime.ownership.identity;
  const link = await AmqpLink.open({ url: options.amqpUrl, name: `turnchart host ${ownerId}`, warn: host.warn });
  let stopPublishing: () => Promise<void> = () => Promise.resolve();
  let rpc: RpcClient | null = null;
  let follower: UpdateFollower | null = null;
  try {
    rpc = await RpcClient.start(link);
    follower = await UpdateFollower.start(link, rpc, Math.max(100, Math.floor(leaseTtlMs / 3)));
    stopPublishing = await publishUpdates(link, host.runtime, host.warn);
    await serveCommands(link, ownerId, (body) => answerCommand(host, body), host.warn);
  } catch (error) {
    follower?.close();
    rpc?.close();
    await link.close();
    throw error;
  }
  const routing = { rpc, follower, timeoutMs: options.routeTimeoutMs ?? DEFAULT_ROUTE_TIMEOUT_MS };
  const stopSweeping = sweepExpiredLeases(host.runtime, host.storage, leaseTtlMs, host.warn);
  return {
    router: { remote: (sessionId, holder, caller) => new RemoteSession(sessionId, holder, routing, caller) },
    quiesce: stopSweeping,
    readings: () => ({ routedCommands: routing.rpc.results, brokerReconnects: link.reconnects }),
    close: async () => {
      stopSweeping();
      routing.follower.close();
      // Bounded: with the broker away, unconfirmed updates would wait for a reconnect that may never come.
      await withDeadline(stopPublishing(), 2_000, () => undefined);
      routing.rpc.close();
      await link.close();
    },
  };
}
