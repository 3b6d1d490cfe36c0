import type { SessionStorage } from '../../storage/session-storage.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { ApiError, defaultMessage, viaStorage } from './errors.js';
import type { SseOptions } from './sse-stream.js';
import type { TaskClient } from '../tasks/task-client.js';

/** What every route reaches: the runtime, its storage, and the host's settings. */
export interface HostContext {
  runtime: Runtime;
  storage: SessionStorage;
  /** Every session the service creates works in this directory. */
  workspaceDir: string;
  sse: SseOptions;
  warn: (message: string) => void;
  /** Submitting and controlling tasks: null when the host runs without RabbitMQ. */
  tasks: TaskClient | null;
  /** Whether the last storage check failed (read by `/healthz`). */
  storageDown: boolean;
}

/** The session, opened again from storage when it was closed for being idle. */
export async function sessionOf(host: HostContext, sessionId: string): Promise<SessionHandle> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return reloadedIfRequired(open);
  return viaStorage(() => host.runtime.openSession(sessionId));
}

/**
 * A session whose checkpoint was stored but could not be read back (storage failed in between)
 * takes no turn until its conversation is reloaded; the API has no reload command, so the host
 * reloads it here, before the request's own command. While storage still fails the reload fails
 * too, and the command answers `ReloadRequired` as before.
 */
async function reloadedIfRequired(session: SessionHandle): Promise<SessionHandle> {
  if (session.actor.getSnapshot().context.reloadRequired) await session.reload();
  return session;
}

/** A command's answer: its value, or the typed error it carried, thrown for the app's error handler. */
export function unwrap<T extends { ok: boolean }>(result: T): Extract<T, { ok: true }> {
  if (result.ok) return result as Extract<T, { ok: true }>;
  const { error } = result as unknown as { error: { code: string; message?: string } & Record<string, unknown> };
  const { code, message, ...details } = error;
  throw new ApiError(code, message ?? defaultMessage(code), details);
}
