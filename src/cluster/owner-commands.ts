import { z } from 'zod';
import { typedError } from '../host/errors.js';
import { localHandle, visibleTo, type HostContext } from '../host/host-context.js';
import { feedStart, LocalSession } from '../host/local-session.js';
import { SessionOwnedElsewhereError } from '../protocol/errors.js';
import type { SessionCommands } from '../protocol/command-catalog.js';
import { commandRequestSchema, type CommandReply, type CommandRequest } from './messages.js';

/** Told to the routing host when the session changed hands between its lookup and the command's arrival. */
export const SESSION_MOVED = 'SessionMoved';

/**
 * A command routed to this host, run exactly as the route would run it here: the same session
 * handle, the same validation, the same typed errors (as values, since they cross the broker).
 */
export async function answerCommand(host: HostContext, body: unknown): Promise<CommandReply> {
  const parsed = commandRequestSchema.safeParse(body);
  if (!parsed.success) return { ok: false, error: { code: 'InvalidInput', message: z.prettifyError(parsed.error) } };
  try {
    return { ok: true, value: await run(host, parsed.data) };
  } catch (error) {
    if (error instanceof SessionOwnedElsewhereError) return { ok: false, error: { code: SESSION_MOVED, message: error.message } };
    const what = parsed.data.op === 'command' ? parsed.data.name : parsed.data.op;
    const about = 'sessionId' in parsed.data ? { sessionId: parsed.data.sessionId } : {};
    return { ok: false, error: typedError(error, (detail) => host.warn(`routed command ${what} failed: ${detail}`, about)) };
  }
}

async function run(host: HostContext, request: CommandRequest): Promise<unknown> {
  if (request.op === 'holds') return { open: request.sessionIds.filter((id) => host.runtime.isOpen(id)) };
  // The routing host checked the caller; the owner checks again, against the session it holds.
  const handle = visibleTo(request.caller, await localHandle(host, request.sessionId));
  // The input goes as the client sent it: the handle validates it, as for a request made here.
  const commands: SessionCommands = handle;
  if (request.op === 'command') return commands[request.name](request.input);
  const session = new LocalSession(handle, host.runtime);
  switch (request.op) {
    case 'snapshot':
      return session.snapshot();
    case 'turnState':
      return session.turnState(request.turnId, request.waitMs);
    case 'context':
      return session.contextWindow();
    case 'feed':
      return feedStart(handle, request.after);
  }
}
