import { createServer } from 'node:net';
import { createWebSocketInspector, createWebSocketReceiver } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { sqliteFile } from '../support/databases.js';
import { testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';

type Message = { type: string; sessionId: string; snapshot?: { value?: unknown; context?: unknown }; event?: { type: string } } & Record<string, unknown>;

const stops: (() => unknown)[] = [];
let host: TestHost | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
  for (const stop of stops.splice(0)) await stop();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Stately's own relay (`createInspectorServer`) with Stately's own receiver on it, ready once a probe has gone through. */
async function statelyRelay(): Promise<{ url: string; received: Message[] }> {
  const port = await freePort();
  const relay = createInspectorServer({ port, autoOpen: false });
  stops.push(() => relay.stop());
  const url = `ws://127.0.0.1:${port}`;
  const received: Message[] = [];
  await until('the relay listens', () => new Promise<boolean>((resolve) => {
    const probe = new WebSocket(url);
    probe.on('open', () => (probe.close(), resolve(true)));
    probe.on('error', () => resolve(false));
  }));
  createWebSocketReceiver({ server: url }).subscribe((m) => received.push(m as unknown as Message));
  const sender = new WebSocket(url);
  stops.push(() => sender.close());
  await new Promise((resolve) => sender.on('open', resolve));
  await until('the receiver hears the relay', () => {
    sender.send(JSON.stringify({ type: 'probe', _version: 'test', sessionId: '' }));
    return received.some((m) => m.type === 'probe');
  });
  return { url, received };
}

describe('forwarding inspection to Stately’s inspector (@statelyai/inspect 0.7.2 WebSocket format)', () => {
  it('sends what Stately’s own WebSocket inspector sends for the same actors, sanitized', async () => {
    const ours = await statelyRelay();
    const theirs = await statelyRelay();
    const reference = createWebSocketInspector({ url: theirs.url });
    stops.push(() => reference.stop());
    host = await testHost(sqliteFile(), [{ text: 'w', toolCalls: [{ name: 'write_file', args: { path: 'a.md', content: 'x', apiKey: 'sk-live' } }] }, { text: 'done' }], {
      statelyInspect: ours.url,
      runtime: { inspect: (event) => reference.inspect.next?.(event) },
    });
    const { body } = await host.call('POST', '/sessions', { permissionMode: 'auto' });
    const turn = await host.call('POST', `/sessions/${body.sessionId as string}/turns`, { clientRequestId: 'r', input: [{ type: 'text', text: 'go' }] });
    await host.call('GET', `/sessions/${body.sessionId as string}/turns/${turn.body.turnId as string}?wait=30`);
    // The session actor's return to idle is the last inspection event of the turn; the turn's own `completed` comes
    // before it, so waiting only for that compared one relay that had the idle with one that did not yet.
    const settled = (list: Message[]) => {
      const snapshots = list.filter((m) => m.type === '@xstate.snapshot');
      const finishing = snapshots.findIndex((m) => m.snapshot?.value === 'finishing');
      return finishing >= 0 && snapshots.slice(finishing).some((m) => m.sessionId === snapshots[finishing]!.sessionId && m.snapshot?.value === 'idle');
    };
    await until('both relays carry the session back at idle', () => settled(ours.received) && settled(theirs.received));

    const inspection = (list: Message[]) => list.filter((m) => m.type.startsWith('@xstate.'));
    const mine = inspection(ours.received);
    const stately = inspection(theirs.received);
    const keys = (list: Message[], type: string) => new Set(list.filter((m) => m.type === type).flatMap((m) => Object.keys(m)));
    for (const type of ['@xstate.actor', '@xstate.event', '@xstate.snapshot']) expect(keys(mine, type), type).toEqual(keys(stately, type));
    expect(mine.every((m) => m._version === '0.7.2')).toBe(true);
    // The same actors, registered under the same names, parents and definitions' machine ids.
    const actors = (list: Message[]) => list.filter((m) => m.type === '@xstate.actor').map((m) => [m.sessionId, m.name, m.parentId, (JSON.parse(m.definition as string) as { id?: string }).id]);
    expect(actors(mine)).toEqual(actors(stately));
    // Each actor goes through the same states.
    const values = (list: Message[]) => list.filter((m) => m.type === '@xstate.snapshot').map((m) => JSON.stringify([m.sessionId, m.snapshot?.value]));
    expect(values(mine)).toEqual(values(stately));
    expect(mine.filter((m) => m.type === '@xstate.event').map((m) => m.event?.type)).toEqual(stately.filter((m) => m.type === '@xstate.event').map((m) => m.event?.type));
    // What leaves the host is sanitized: the credential in the tool call's arguments does not.
    expect(JSON.stringify(stately)).toContain('sk-live');
    expect(JSON.stringify(mine)).not.toContain('sk-live');
  });

  it('rejects a --stately-inspect value that is not a WebSocket URL', async () => {
    const { serveSettings } = await import('../../src/cli/serve.js');
    expect(() => serveSettings(['--stately-inspect', 'http://x'], {})).toThrow(/ws:\/\//);
    expect(serveSettings([], { TURNCHART_STATELY_INSPECT: 'ws://127.0.0.1:8080' })['stately-inspect']).toBe('ws://127.0.0.1:8080');
  });
});
