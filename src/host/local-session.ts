import type { ContextWindowPreview } from '../context/preview.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { viaStorage } from './errors.js';
import type { FeedSink, SessionAccess, UpdateFeed } from './session-access.js';
import { feedStart } from './sse-resume.js';
import type { TurnStatusResult } from '../protocol/command-results.js';
import type { CommandInput, CommandResult, RoutedCommandName, SessionCommands } from '../protocol/command-catalog.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';

/** Where a stream starts: the cluster's owner answers a follower's `feed` with it too. */
export { feedStart };

/** A session open in this host's runtime, behind the routes' command surface. */
export class LocalSession implements SessionAccess {
  constructor(
    private readonly handle: SessionHandle,
    private readonly runtime: Runtime,
  ) {}

  get id(): string {
    return this.handle.id;
  }

  call<K extends RoutedCommandName>(name: K, input: CommandInput<K>): Promise<CommandResult<K>> {
    const commands: SessionCommands = this.handle;
    return commands[name](input);
  }

  snapshot(): Promise<SessionSnapshot> {
    return Promise.resolve(this.handle.snapshot());
  }

  async turnState(turnId: string, waitMs: number, gone?: AbortSignal): Promise<TurnStatusResult> {
    const state = await viaStorage(() => this.handle.turnStatus(turnId));
    if (waitMs <= 0 || !state.ok || (state.status !== 'running' && state.status !== 'queued')) return state;
    await untilEnded(this.handle, turnId, waitMs, gone);
    return viaStorage(() => this.handle.turnStatus(turnId));
  }

  contextWindow(): Promise<ContextWindowPreview> {
    return viaStorage(() => this.runtime.inspectContextWindow(this.handle.id));
  }

  /**
   * Subscribed before the start is read, in the same tick, so nothing falls between the two;
   * updates that come before the stream subscribes wait in a buffer.
   */
  updateFeed(after: number | null): Promise<UpdateFeed> {
    const handle = this.handle;
    let sink: FeedSink | null = null;
    let ended = false;
    const early: UpdateEnvelope[] = [];
    const subscription = handle.updates$.subscribe({
      next: (envelope) => (sink ? sink.update(envelope) : early.push(envelope)),
      complete: () => (sink ? sink.end() : (ended = true)),
    });
    const start = feedStart(handle, after);
    return Promise.resolve({
      start,
      subscribe(next) {
        sink = next;
        for (const envelope of early.splice(0)) next.update(envelope);
        if (ended) next.end();
        return () => subscription.unsubscribe();
      },
    });
  }
}

/** Resolves when the turn ends, the time is up, or the client goes away — whichever comes first. */
async function untilEnded(session: SessionHandle, turnId: string, ms: number, gone?: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onGone = (): void => undefined;
  await Promise.race([
    session.waitForTurn(turnId),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      onGone = resolve;
      gone?.addEventListener('abort', onGone, { once: true });
    }),
  ]);
  clearTimeout(timer);
  gone?.removeEventListener('abort', onGone);
}
