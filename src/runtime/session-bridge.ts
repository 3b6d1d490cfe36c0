import { Observable } from 'rxjs';
import { fromEventObservable } from 'xstate';
import { FROM_BRIDGE, type BridgeEvent, type EmbeddedSessionInput, type PermissionRequest } from '../../machines/embedded-session.machine.js';
import type { ChatMessage } from '../protocol/messages.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { SessionHandle } from './session-handle.js';

/** What an embedded session needs from its runtime. */
export interface EmbeddingPort {
  /**
   * Opens (or creates) the session for one embedding actor, under the runtime's lease; refuses a
   * session another actor embeds. `afterSequence`: the updates after it are the actor's to hear.
   */
  open(input: unknown): Promise<{ handle: SessionHandle; afterSequence: number }>;
  /** The embedding is over: the session closes (a running turn ends `actor_stopped`). */
  release(handle: SessionHandle): void;
  /** The handle an embedding actor holds, if it still holds it. */
  held(sessionId: string): SessionHandle | undefined;
  /** The session's conversation as it stands (to find a tool call's arguments). */
  conversation(sessionId: string): readonly ChatMessage[];
}

/**
 * The embedded chart's `sessionBridge`: opens the session, emits `bridge.opened`, then every update
 * envelope of the session — those issued since the embedding began first — as it is issued. It
 * completes when the session closes and errors when it cannot be opened; unsubscribing (the actor
 * stopped) closes the session, exactly as `session.close()` would.
 */
export function sessionBridge(port: EmbeddingPort) {
  return fromEventObservable<BridgeEvent, EmbeddedSessionInput>(
    ({ input }) =>
      new Observable<BridgeEvent>((subscriber) => {
        let stopped = false;
        let handle: SessionHandle | null = null;
        let updates: { unsubscribe(): void } | null = null;
        port.open(input).then(
          (opened) => {
            // The host stopped the actor while the session was opening: it is closed at once.
            if (stopped) return port.release(opened.handle);
            handle = opened.handle;
            updates = relay(port, opened.handle, opened.afterSequence, (event) => subscriber.next(event), () => subscriber.complete());
          },
          (error: unknown) => subscriber.error(error),
        );
        return () => {
          stopped = true;
          updates?.unsubscribe();
          if (handle) port.release(handle);
        };
      }),
  );
}

/**
 * Announces the open session and relays its updates. What is issued while the chart takes the
 * announcement (a deferred command starting a turn) is held and relayed after it, in order, so the
 * host hears `opened` first and every update after it exactly once.
 */
function relay(port: EmbeddingPort, handle: SessionHandle, afterSequence: number, next: (event: BridgeEvent) => void, complete: () => void) {
  const backlog = handle.replayUpdates(afterSequence);
  const held: UpdateEnvelope[] = backlog.ok ? [...backlog.updates] : [];
  let live = false;
  const forward = (envelope: UpdateEnvelope) => next(bridgeEventOf(port, envelope));
  const subscription = handle.updates$.subscribe({
    next: (envelope) => (live ? forward(envelope) : held.push(envelope)),
    complete,
  });
  next({ type: 'bridge.opened', sessionId: handle.id, [FROM_BRIDGE]: true } as BridgeEvent);
  for (let i = 0; i < held.length; i++) forward(held[i]!);
  live = true;
  return subscription;
}

function bridgeEventOf(port: EmbeddingPort, envelope: UpdateEnvelope): BridgeEvent {
  const update = envelope.update;
  if (update.type !== 'permission_requested') return { type: 'bridge.update', envelope, [FROM_BRIDGE]: true } as BridgeEvent;
  const request: PermissionRequest = {
    sessionId: envelope.sessionId,
    turnId: envelope.turnId,
    toolCallId: update.toolCallId,
    tool: update.name,
    args: toolCallArgs(port.conversation(envelope.sessionId), update.toolCallId),
    paths: update.paths,
  };
  return { type: 'bridge.permission_requested', envelope, request, [FROM_BRIDGE]: true } as BridgeEvent;
}

/** The arguments of a stored tool call; a call only asks for approval once they parsed as an object. */
function toolCallArgs(conversation: readonly ChatMessage[], toolCallId: string): Record<string, unknown> {
  for (let i = conversation.length - 1; i >= 0; i--) {
    const message = conversation[i]!;
    if (message.role !== 'assistant') continue;
    const call = message.toolCalls.find((c) => c.id === toolCallId);
    if (!call) continue;
    try {
      const args: unknown = JSON.parse(call.argumentsText);
      return args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }
  return {};
}
