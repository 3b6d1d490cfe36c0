import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterSkipReason } from '../support/cluster-hosts.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { until } from '../support/poll.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-otel-two-');

/** The caller's span: the turn started through host A is its child, wherever it goes on. */
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const CALLER_TRACE_PARENT = `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01`;

type PendingApproval = { toolCallId: string } | null | undefined;

/**
 * Issue 27 with issue 26, as operators run it: two `turnchart serve --otel` processes on one
 * PostgreSQL schema and RabbitMQ, each exporting OTLP/HTTP JSON to the same receiver under its own
 * service name. A turn started on A with a `traceparent` waits for an approval; A is stopped with
 * SIGTERM (the turn is parked, A's spans flushed), the approval is answered through B, which opens
 * the session and resumes the turn under its id: both halves are one trace, the caller's.
 */
describe.skipIf(clusterSkipReason !== null)('turnchart serve --otel on two hosts', { timeout: 60_000 }, () => {
  const hosts: HostProcess[] = [];
  let receiver: OtlpReceiver | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    await receiver?.close();
    await drop?.();
    receiver = drop = undefined;
  });

  async function otelHost(name: 'a' | 'b', options: { databaseUrl: string; workspace: string; replies: unknown[] }): Promise<HostProcess> {
    const script = path.join(options.workspace, `${name}-model.json`);
    await writeFile(script, JSON.stringify(options.replies));
    const host = await spawnHost(
      [
        '--otel',
        '--database-url',
        options.databaseUrl,
        '--amqp-url',
        process.env.TEST_AMQP_URL!,
        '--workspace',
        options.workspace,
        '--model',
        `scripted:${script}`,
        '--owner-host',
        `${name}.otel.test`,
      ],
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: `turnchart-${name}`,
        OTEL_RESOURCE_ATTRIBUTES: '',
        OTEL_TRACES_EXPORTER: '',
        OTEL_BSP_SCHEDULE_DELAY: '',
      },
    );
    hosts.push(host);
    return host;
  }

  /** Stops a host as an operator does, and waits until it has ended (its spans flushed on the way out). */
  async function stop(host: HostProcess): Promise<void> {
    host.kill('SIGTERM');
    expect(await host.exited, host.output()).toBe(0);
    await host.closed;
    hosts.splice(hosts.indexOf(host), 1);
    expect(host.output()).toContain('otel: traces exported over OTLP');
  }

  async function pendingApproval(url: string, sessionId: string): Promise<PendingApproval> {
    const snapshot = await call(url, 'GET', `/sessions/${sessionId}`);
    return (snapshot.body.runtime as { pendingApproval?: PendingApproval } | undefined)?.pendingApproval;
  }

  it("a turn parked by A's SIGTERM and resumed on B is one trace, the caller's; a turn without a traceparent is a trace of its own", async () => {
    receiver = await startOtlpReceiver();
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    await writeFile(path.join(workspace, 'notes.txt'), 'the build is green\n');
    const common = { databaseUrl: db.url, workspace };
    const [a, b] = await Promise.all([
      otelHost('a', { ...common, replies: [{ text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'out.md', content: 'x' } }] }] }),
      otelHost('b', {
        ...common,
        replies: [{ text: 'written on b' }, { toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' } }] }, { text: 'The build is green.' }],
      }),
    ]);

    // 1. The turn starts on A, a child of the caller's span, and waits for its approval.
    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' })).body.sessionId as string;
    const started = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'c1', input: [{ type: 'text', text: 'write it' }] }, { traceparent: CALLER_TRACE_PARENT });
    expect(started.status).toBe(202);
    const turnId = started.body.turnId as string;
    let asked: PendingApproval;
    await until('the approval to be pending on A', async () => Boolean((asked = await pendingApproval(a.url, sessionId))));
    const toolCallId = asked!.toolCallId;
    // Nothing exported yet: the batch waits its 5 s.
    expect(receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId)).toEqual([]);

    // 2. A stops cleanly: the turn is parked, A's spans flushed.
    await stop(a);
    const fromA = spansOf(receiver, turnId, 'turnchart-a');
    expect(fromA.map((span) => span.name).sort()).toEqual(['chat scripted', 'execute_tool write_file', 'invoke_agent default']);

    // 3. B opens the session, the turn goes on there under its id and waits for the same approval; answered, it completes.
    await until('the approval to be pending on B', async () => (await pendingApproval(b.url, sessionId))?.toolCallId === toolCallId);
    expect((await call(b.url, 'POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, { decision: 'allow_once' })).status).toBe(200);
    expect((await call(b.url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`)).body).toMatchObject({ status: 'completed', outcome: { finalText: 'written on b' } });

    // A second turn on B, with no traceparent.
    const other = (await call(b.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const second = await call(b.url, 'POST', `/sessions/${other}/turns`, { clientRequestId: 'c2', input: [{ type: 'text', text: 'Is the build green?' }] });
    expect(second.status).toBe(202);
    const secondId = second.body.turnId as string;
    expect((await call(b.url, 'GET', `/sessions/${other}/turns/${secondId}?wait=30`)).body).toMatchObject({ status: 'completed', outcome: { finalText: 'The build is green.' } });

    // 4. B stops: its spans are flushed too.
    await stop(b);
    const fromB = spansOf(receiver, turnId, 'turnchart-b');
    expect(fromB.map((span) => span.name).sort()).toEqual(['chat scripted', 'execute_tool write_file', 'invoke_agent default']);

    // Every span of the turn, from either host, is in the caller's trace; nothing else reported it.
    const all = receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId);
    expect(all).toHaveLength(fromA.length + fromB.length);
    for (const span of all) expect(span.traceId, span.name).toBe(CALLER_TRACE_ID);

    // A's turn span is a child of the caller's span; so is B's resumed one (the stored traceparent): siblings in one trace.
    const turnOnA = fromA.find((span) => span.name === 'invoke_agent default')!;
    const turnOnB = fromB.find((span) => span.name === 'invoke_agent default')!;
    expect(turnOnA.parentSpanId).toBe(CALLER_SPAN_ID);
    expect(turnOnA.attributes['turnchart.span.id']).toBe(`turn:${turnId}`);
    expect(turnOnB.parentSpanId).toBe(CALLER_SPAN_ID);
    expect(turnOnB.attributes['turnchart.span.id']).toBe(`turn:${turnId}:resumed`);
    expect(turnOnB.attributes['turnchart.resume.reason']).toBe('reopened');
    expect(turnOnB.spanId).not.toBe(turnOnA.spanId);
    expect(turnOnA.attributes['gen_ai.conversation.id']).toBe(sessionId);
    expect(turnOnB.attributes['gen_ai.conversation.id']).toBe(sessionId);
    // Each host's calls are children of its own part of the turn.
    for (const span of fromA.filter((s) => s !== turnOnA)) expect(span.parentSpanId, span.name).toBe(turnOnA.spanId);
    for (const span of fromB.filter((s) => s !== turnOnB)) expect(span.parentSpanId, span.name).toBe(turnOnB.spanId);
    // The tool ran on B, once allowed; A's call was still waiting when A stopped.
    expect(fromB.find((span) => span.name === 'execute_tool write_file')!.attributes).toMatchObject({ 'gen_ai.tool.call.id': toolCallId, 'turnchart.permission.decision': 'allowed by user' });
    expect(fromA.find((span) => span.name === 'execute_tool write_file')!.attributes).toMatchObject({ 'gen_ai.tool.call.id': toolCallId });

    // The turn started on B without a traceparent: one trace of its own, not the caller's.
    const secondSpans = spansOf(receiver, secondId, 'turnchart-b');
    expect(secondSpans.map((span) => span.name).sort()).toEqual(['chat scripted', 'chat scripted', 'execute_tool read_file', 'invoke_agent default']);
    const secondTrace = secondSpans[0]!.traceId;
    expect(secondTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(secondTrace).not.toBe(CALLER_TRACE_ID);
    for (const span of secondSpans) expect(span.traceId, span.name).toBe(secondTrace);
    const secondTurn = secondSpans.find((span) => span.name === 'invoke_agent default')!;
    for (const span of secondSpans.filter((s) => s !== secondTurn)) expect(span.parentSpanId, span.name).toBe(secondTurn.spanId);
    // Its parent is the synthetic root stored with the turn: an id no exported span has.
    expect(secondTurn.parentSpanId).toMatch(/^[0-9a-f]{16}$/);
    expect(receiver.spans.some((span) => span.spanId === secondTurn.parentSpanId)).toBe(false);
    expect(receiver.refused).toBe(0);
  });
});

/** The spans a host (by its service name) reported for a turn. */
function spansOf(receiver: OtlpReceiver, turnId: string, service: string): ReceivedSpan[] {
  return receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId && span.resource['service.name'] === service);
}
