import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../../src/index.js';
import type { SessionHandle } from '../../../../src/runtime/session-handle.js';
import { durableTargets, type DurableDatabase } from '../../databases.js';
import { runTurn } from '../../harness.js';
import { runsFor, seedFor, type Size } from '../budget.js';
import { endlessModel } from '../endless-model.js';
import { expectUnpolluted, prototypeNames } from '../hostile-host.js';
import { checkProperty } from '../property.js';
import { PUBLIC_COMMANDS, settle, type Ids, type PublicCommand, type Target } from '../public-commands.js';
import { hostileLeaf, Hostile, nearlyValid } from '../values.js';

/**
 * Every public command of `SessionHandle` and `Runtime` fed hostile values — wrong types, huge
 * strings, deep nesting, prototype names and polluting objects, NUL and lone surrogates, odd
 * numbers, throwing getters, proxies — or well-formed arguments with one hostile part, one call
 * per generated input, on one session that also runs the turns the well-formed inputs start and
 * is reopened after a `close`. Each call must answer with a typed value or a `TurnchartError`
 * within the watchdog; afterwards the session completes a normal turn and no prototype changed.
 */
export function describePublicCommands(size: Size, file: string): void {
  describe.each(durableTargets)('hostile public commands on $name', ({ name, skip, create }) => {
    const runs = runsFor('public commands', size, name);
    const before = prototypeNames();
    let fixture: Fixture | undefined;
    beforeAll(async () => {
      if (!skip) fixture = await openFixture(create());
    });
    afterAll(async () => {
      await fixture?.close();
    });

    it.skipIf(skip)(`public commands on ${name}: every call answers typed, and the session still runs a turn`, { timeout: 60_000 + runs * 20 }, async () => {
      const f = fixture!;
      const called = new Set<string>();
      const input = fc
        .tuple(fc.constantFrom(...PUBLIC_COMMANDS.map((c) => c.name)), fc.boolean())
        .chain(([command, reopen]) => argumentFor(commandNamed(command), f.ids).map((argument) => ({ command, argument, reopen })));
      await checkProperty({ suite: `public commands on ${name}`, file, runs, seed: seedFor(size, 9_000) }, input, async ({ command: name, argument, reopen }) => {
        const command = commandNamed(name);
        called.add(name);
        if (reopen && !f.target.session.isOpen) f.target.session = await f.target.runtime.openSession(f.ids.sessionId);
        const value = argument.make();
        const settled = await settle(() => command.call(f.target, value));
        const problem = command.untyped(settled);
        if (problem) throw new Error(`${command.name}(${argument.label}) ${problem}`);
        await keepOnlyTheSession(f, command, settled);
      });
      expect([...called].sort()).toEqual(PUBLIC_COMMANDS.map((c) => c.name).sort());
      await expectUsable(f);
      expectUnpolluted(before);
    });
  });
}

const commandNamed = (name: string) => PUBLIC_COMMANDS.find((c) => c.name === name)!;

function argumentFor(command: PublicCommand, ids: Ids): fc.Arbitrary<Hostile> {
  const valid = command.valid(ids);
  return fc.oneof(
    { weight: 1, arbitrary: valid.map((v) => new Hostile(`well-formed ${fc.stringify(v)}`, () => structuredClone(v))) },
    { weight: 4, arbitrary: nearlyValid(valid) },
    { weight: 3, arbitrary: hostileLeaf },
  );
}

interface Fixture {
  target: Target;
  ids: Ids;
  close(): Promise<void>;
}

async function openFixture(db: DurableDatabase): Promise<Fixture> {
  const workspaceDir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-hostile-'));
  const runtime: Runtime = await createRuntime({ storage: db.open(), model: endlessModel() });
  const session = await runtime.createSession({ workspaceDir, permissionMode: 'ask' });
  const { turnId } = await runTurn(session, 'setup', 'setup-1');
  const compacted = await session.compactConversation();
  if (!compacted.ok) throw new Error(`setup: compaction refused: ${JSON.stringify(compacted.error)}`);
  return {
    target: { runtime, session },
    ids: { sessionId: session.id, turnId, compactionId: compacted.compactionId, workspaceDir },
    close: async () => {
      await runtime.shutdown();
      await db.drop();
      await rm(workspaceDir, { recursive: true, force: true });
    },
  };
}

/** Sessions a generated `createSession` made are closed again; an `openSession` of the session becomes its handle. */
async function keepOnlyTheSession(f: Fixture, command: PublicCommand, settled: Awaited<ReturnType<typeof settle>>): Promise<void> {
  if (!('value' in settled)) return;
  const handle = settled.value as SessionHandle;
  if (command.name === 'createSession') await handle.close();
  if (command.name === 'openSession' && handle.id === f.ids.sessionId) f.target.session = handle;
}

/** Whatever a generated input started has ended, and the (reopened) session completes a normal turn. */
async function expectUsable(f: Fixture): Promise<void> {
  if (!f.target.session.isOpen) f.target.session = await f.target.runtime.openSession(f.ids.sessionId);
  const { session } = f.target;
  const view = session.snapshot().runtime;
  if (view.kind === 'running') await session.waitForTurn(view.turnId);
  expect(session.actor.getSnapshot().status).toBe('active');
  const { outcome } = await runTurn(session, 'a normal turn after the hostile calls', `after-${Date.now()}`);
  expect(outcome).toEqual({ status: 'completed', finalText: 'ok' });
}
