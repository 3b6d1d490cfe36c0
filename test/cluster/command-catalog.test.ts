import { afterEach, describe, expect, it } from 'vitest';
import { clusterOf } from '../../src/cluster/cluster.js';
import {
  commandCatalog,
  commandOkOf,
  commandResultOf,
  isRoutedCommand,
  type CommandInput,
  type CommandName,
  type CommandResult,
  type RoutedCommandName,
  type SessionCommands,
} from '../../src/protocol/command-catalog.js';
import { clusterSkipReason } from '../support/cluster-hosts.js';
import { postgresSchema, POSTGRES_URL, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';

/** Which session a command is tried on: one that never ran a turn, or one whose turn `req-done` completed. */
type Session = 'fresh' | 'turned';

/** A command's case: its input, and the HTTP request that runs it (method, path under the session, body). */
interface Case<K extends RoutedCommandName> {
  session: Session;
  input: CommandInput<K>;
  http: [method: string, path: string, body?: unknown];
}

/**
 * One case per command a host routes — typed by the catalog, so a command added there is missing
 * here until it has an HTTP route. Each answers the same in any order and however often it runs.
 */
const CASES: { [K in RoutedCommandName]: Case<K> } = {
  // The request of the completed turn again: the same turn, its run and its status.
  submitTurn: {
    session: 'turned',
    input: { clientRequestId: 'req-done', input: [{ type: 'text', text: 'hello' }] },
    http: ['POST', '/turns', { clientRequestId: 'req-done', input: [{ type: 'text', text: 'hello' }] }],
  },
  cancelTurn: { session: 'fresh', input: 'turn_unknown', http: ['POST', '/turns/turn_unknown/cancel'] },
  resolvePermission: {
    session: 'fresh',
    input: { turnId: 'turn_unknown', toolCallId: 'call_unknown', decision: 'deny' },
    http: ['POST', '/turns/turn_unknown/permissions/call_unknown', { decision: 'deny' }],
  },
  setPermissionMode: { session: 'fresh', input: 'read_only', http: ['PUT', '/permission-mode', { mode: 'read_only' }] },
  switchAgent: { session: 'fresh', input: 'default', http: ['PUT', '/agent', { agent: 'default' }] },
  deliverAgentMessage: { session: 'fresh', input: { from: 'ses_peer', text: 'a note' }, http: ['POST', '/agent-messages', { from: 'ses_peer', text: 'a note' }] },
  compactConversation: { session: 'fresh', input: undefined, http: ['POST', '/compact'] },
  rewindConversation: { session: 'fresh', input: 'cmp_unknown', http: ['POST', '/rewind', { compactionId: 'cmp_unknown' }] },
};

/** An HTTP answer read as the command's result: a success body as its success, an error body as its refusal. */
function asResult<K extends CommandName>(name: K, answer: { status: number; body: Record<string, unknown> }): CommandResult<K> | undefined {
  return answer.status < 300 ? commandOkOf(name, { ...answer.body, ok: true }) : commandResultOf(name, { ok: false, error: answer.body.error });
}

describe.skipIf(clusterSkipReason !== null)('every command of the catalog, reached three ways', { timeout: 60_000 }, () => {
  let db: DurableDatabase | undefined;
  const hosts: TestHost[] = [];
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    await db?.drop();
    db = undefined;
  });

  it('answers the same through the owner’s session handle, its HTTP API, and another cluster host’s HTTP API (a remote session)', async () => {
    db = postgresSchema(POSTGRES_URL!);
    const cluster = () => clusterOf({ amqpUrl: process.env.TEST_AMQP_URL!, routeTimeoutMs: 10_000 });
    const owner = await testHost(db, [{ text: 'done' }], { cluster: cluster() });
    hosts.push(owner);
    const other = await testHost(db, [], { cluster: cluster() });
    hosts.push(other);

    const sessions: Record<Session, string> = { fresh: await newSession(owner), turned: await newSession(owner) };
    const turn = await postTurn(owner, sessions.turned, 'req-done', 'hello');
    expect(turn.status).toBe(202);
    expect(await finished(owner, sessions.turned, turn.body.turnId as string)).toMatchObject({ status: 'completed' });

    // Every command a host routes has a case (the table's type says so too).
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(commandCatalog).filter(isRoutedCommand).sort());

    const answers: Record<string, string> = {};
    for (const name of Object.keys(commandCatalog).filter(isRoutedCommand)) {
      const { session, input, http } = CASES[name];
      const sessionId = sessions[session];
      const [method, path, body] = http;
      const handle: SessionCommands = owner.runtime.openHandle(sessionId)!;
      const local = await handle[name](input);
      const viaOwner = await owner.call(method, `/sessions/${sessionId}${path}`, body);
      const viaOther = await other.call(method, `/sessions/${sessionId}${path}`, body);

      expect({ name, ...viaOther }).toEqual({ name, ...viaOwner });
      expect({ name, result: asResult(name, viaOwner) }).toEqual({ name, result: local });
      answers[name] = local.ok ? `${viaOwner.status}` : `${viaOwner.status} ${local.error.code}`;
    }
    expect(answers).toEqual({
      submitTurn: '202',
      cancelTurn: '409 TurnNotActive',
      resolvePermission: '409 TurnNotActive',
      setPermissionMode: '200',
      switchAgent: '200',
      deliverAgentMessage: '200',
      compactConversation: '409 NothingToCompact',
      rewindConversation: '404 UnknownCompaction',
    });

    // The other host routed every command: it holds neither session.
    expect([other.runtime.isOpen(sessions.fresh), other.runtime.isOpen(sessions.turned)]).toEqual([false, false]);
  });
});
