import { describe, expect, expectTypeOf, it } from 'vitest';
import type { RemoteSession } from '../../src/cluster/remote-session.js';
import type { SessionAccess } from '../../src/host/session-access.js';
import { commandCatalog, commandResultOf, isRoutedCommand, type CommandInput, type CommandName } from '../../src/protocol/command-catalog.js';
import type { PermissionMode } from '../../src/protocol/commands.js';
import type { CompactResult, SetModeResult, SubmitTurnResult } from '../../src/protocol/command-results.js';
import { SessionHandle } from '../../src/runtime/session-handle.js';

describe('the command catalog', () => {
  it('types a remote session\'s call by the command: its input, and a result with only the codes the command lists', () => {
    type SetMode = typeof RemoteSession.prototype.call<'setPermissionMode'>;
    expectTypeOf<Parameters<SetMode>>().toEqualTypeOf<[name: 'setPermissionMode', input: PermissionMode]>();
    expectTypeOf<ReturnType<SetMode>>().toEqualTypeOf<Promise<SetModeResult>>();
    expectTypeOf<SetModeResult>().toEqualTypeOf<
      | { ok: true }
      | { ok: false; error: { code: 'PersistenceError'; message: string } | { code: 'InvalidInput'; message: string } | { code: 'RuntimeStopped' } | { code: 'SessionClosed' } }
    >();
    expectTypeOf<ReturnType<typeof RemoteSession.prototype.call<'compactConversation'>>>().toEqualTypeOf<Promise<CompactResult>>();
    expectTypeOf<Extract<CompactResult, { ok: true }>>().toEqualTypeOf<{ ok: true; compactionId: string }>();

    // The host's surface, the local handle and the remote one answer a command alike.
    const viaHost = (session: SessionAccess) => session.call('submitTurn', { clientRequestId: 'r', input: [] });
    expectTypeOf(viaHost).returns.toEqualTypeOf<Promise<SubmitTurnResult>>();
    expectTypeOf<ReturnType<typeof RemoteSession.prototype.call<'submitTurn'>>>().toEqualTypeOf<Promise<SubmitTurnResult>>();
    expectTypeOf<ReturnType<SessionHandle['submitTurn']>>().toEqualTypeOf<Promise<SubmitTurnResult>>();
    expectTypeOf<CommandInput<'compactConversation'>>().toEqualTypeOf<void>();

    const misuse = (session: RemoteSession) => [
      // @ts-expect-error -- not a permission mode
      session.call('setPermissionMode', 'yolo'),
      // @ts-expect-error -- startTurn is the in-process handle's; hosts submit turns
      session.call('startTurn', { clientRequestId: 'r', input: [] }),
    ];
    expectTypeOf(misuse).toBeFunction();
  });

  it('is what the session handle answers: one method per command', () => {
    for (const name of Object.keys(commandCatalog)) expect(typeof Reflect.get(SessionHandle.prototype, name), name).toBe('function');
    expect(Object.keys(commandCatalog).filter((name) => !isRoutedCommand(name))).toEqual(['startTurn', 'reload']);
  });

  it("takes a reply as a command's result only when the command answers it: its success fields, or a code it lists with that code's fields", () => {
    const cases: [CommandName, unknown, boolean][] = [
      ['setPermissionMode', { ok: true }, true],
      ['setPermissionMode', { ok: false, error: { code: 'PersistenceError', message: 'disk full' } }, true],
      ['setPermissionMode', { ok: false, error: { code: 'SessionClosed' } }, true],
      // Another command's refusal (a turn's), a code nobody answers, a listed code without its fields.
      ['setPermissionMode', { ok: false, error: { code: 'Busy', turnId: 'turn_x' } }, false],
      ['setPermissionMode', { ok: false, error: { code: 'Whatever', message: 'made up' } }, false],
      ['setPermissionMode', { ok: false, error: { code: 'PersistenceError' } }, false],
      ['submitTurn', { ok: false, error: { code: 'Busy', turnId: 'turn_x' } }, true],
      ['submitTurn', { ok: false, error: { code: 'Busy' } }, false],
      ['submitTurn', { ok: true, turnId: 'turn_x', runId: 'run_x', status: 'queued' }, true],
      ['submitTurn', { ok: true, turnId: 'turn_x', runId: 'run_x', status: 'sleeping' }, false],
      ['compactConversation', { ok: true, compactionId: 'cmp_1' }, true],
      ['compactConversation', { ok: true }, false],
      ['cancelTurn', { ok: 'yes' }, false],
      ['cancelTurn', null, false],
      ['cancelTurn', 'ok', false],
    ];
    for (const [name, reply, taken] of cases) expect({ name, reply, taken: commandResultOf(name, reply) !== undefined }).toEqual({ name, reply, taken });
    // What is taken is the command's result as the catalog types it, nothing more.
    expect(commandResultOf('cancelTurn', { ok: false, error: { code: 'TurnNotActive', message: 'extra' } })).toEqual({ ok: false, error: { code: 'TurnNotActive' } });
  });
});
