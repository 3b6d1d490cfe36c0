import { z } from 'zod';
import { embedSessionSchema, type CreateSessionOptions } from '../protocol/commands.js';
import { TurnchartError } from '../protocol/errors.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';
import type { SessionEnv } from './session-env.js';
import type { SessionHandle } from './session-handle.js';
import { createSessionLogic, type SessionLogic } from './session-logic.js';

/** What embedding asks of the runtime's registry of open sessions. */
export interface EmbeddingRegistry {
  /** Throws `RuntimeStopped` once the runtime is shutting down. */
  assertRunning(): void;
  createSession(options: CreateSessionOptions): Promise<SessionHandle>;
  openSession(sessionId: string): Promise<SessionHandle>;
  /** The session held in the runtime (open, or closing and not yet released). */
  held(sessionId: string): { handle: SessionHandle; env: SessionEnv } | undefined;
}

/**
 * Sessions held by actors of host machines through `runtime.sessionLogic`: one actor per session.
 * Apart from the registry because only embedding needs to know which actor holds which session.
 */
export class Embedding {
  /** A session an actor holds, or `null` while its opening for an actor is under way. */
  private readonly embedded = new Map<string, SessionHandle | null>();
  readonly logic: SessionLogic;

  constructor(
    private readonly registry: EmbeddingRegistry,
    private readonly warn: Warn,
  ) {
    this.logic = createSessionLogic(
      {
        open: (input) => this.embed(input),
        release: (handle) => this.unembed(handle),
        held: (id) => this.embedded.get(id) ?? undefined,
        conversation: (id) => registry.held(id)?.env.conversation.chat.conversation() ?? [],
      },
      warn,
    );
  }

  /**
   * Opens a session for an actor of a host machine (`sessionLogic`): a new one, or a stored one
   * under this runtime's lease as `openSession` does. The actor hears the updates issued since the
   * session opened here — or, for one that was already open, from now on.
   */
  private async embed(input: unknown): Promise<{ handle: SessionHandle; afterSequence: number }> {
    this.registry.assertRunning();
    const parsed = embedSessionSchema.safeParse(input);
    if (!parsed.success) throw new TurnchartError('InvalidInput', z.prettifyError(parsed.error));
    const { sessionId, notifyParent: _notifyParent, ...options } = parsed.data;
    if (sessionId === undefined) return this.hold(await this.registry.createSession(options), false);
    // An actor that embedded the session and was just stopped is still closing it: open it anew after that.
    const closing = this.registry.held(sessionId)?.handle;
    if (closing && !closing.isOpen && !this.embedded.has(sessionId)) await closing.close();
    if (this.embedded.has(sessionId)) throw new TurnchartError('SessionEmbedded', `session '${sessionId}' is already embedded in another actor`);
    this.embedded.set(sessionId, null);
    try {
      const wasOpen = this.registry.held(sessionId) !== undefined;
      return this.hold(await this.registry.openSession(sessionId), wasOpen);
    } catch (error) {
      this.embedded.delete(sessionId);
      throw error;
    }
  }

  private hold(handle: SessionHandle, wasOpen: boolean): { handle: SessionHandle; afterSequence: number } {
    const open = this.registry.held(handle.id);
    if (open?.handle !== handle || !handle.isOpen) {
      this.embedded.delete(handle.id);
      throw new TurnchartError('SessionClosed', `session '${handle.id}' closed while it was being embedded`);
    }
    this.embedded.set(handle.id, handle);
    const updates = open.env.output.updates;
    return { handle, afterSequence: wasOpen ? updates.lastSequence : updates.openedAfter };
  }

  /** The embedding actor stopped (or its session closed): the session closes as `session.close()` closes it. */
  private unembed(handle: SessionHandle): void {
    if (this.embedded.get(handle.id) === handle) this.embedded.delete(handle.id);
    handle.close().catch((error: unknown) => this.warn(`could not close embedded session ${handle.id}: ${messageOf(error)}`, { sessionId: handle.id }));
  }
}
