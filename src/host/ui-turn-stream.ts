import type { UIMessageChunk } from 'ai';
import type { SessionStorage } from '../../storage/session-storage.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { SessionAccess, UpdateFeed } from './session-access.js';
import { TurnRecords } from './turn-records.js';
import { UiMessageTranslator } from './ui-message-stream.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * A session's updates, held from the moment the tap opens. It is opened before the command that
 * starts, answers or is resumed into a turn, so no update of that turn falls between the command
 * and its stream. It reads the session's update feed, so on a host that does not own the session
 * the updates come from the owner through the cluster broker.
 */
export class UpdateTap {
  private readonly held: UpdateEnvelope[] = [];
  private wake: (() => void) | null = null;
  private done = false;
  private stop: (() => void) | null = null;

  private constructor(feed: UpdateFeed) {
    const stop = feed.subscribe({
      update: (envelope) => {
        this.held.push(envelope);
        this.wake?.();
      },
      end: () => this.close(),
    });
    // A feed that had already ended closed the tap while subscribing, before its stop was known.
    if (this.done) stop();
    else this.stop = stop;
  }

  /** A tap on the session's live updates (its feed's start is not needed: every turn is replayed from storage). */
  static async open(session: SessionAccess): Promise<UpdateTap> {
    return new UpdateTap(await session.updateFeed(null));
  }

  /** The envelopes that arrived since the last take, waiting for one; null once the tap is closed. */
  async take(): Promise<UpdateEnvelope[] | null> {
    while (this.held.length === 0) {
      if (this.done) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
    return this.held.splice(0);
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.stop?.();
    this.wake?.();
  }
}

/** A turn ready to stream: the chunks that open the response, then the live updates after `floor`. */
export interface PreparedTurn {
  turnId: string;
  translator: UiMessageTranslator;
  records: TurnRecords;
  opening: UIMessageChunk[];
  /** Updates up to this sequence are already in `opening`. */
  floor: number;
}

/** Tries to read storage and the live view at one point in time before settling for an approximate one. */
const CONSISTENT_READ_ATTEMPTS = 5;

/**
 * The whole turn from its start, for a client with nothing of it (a resumed stream, a message sent
 * again): what storage holds, the model call under way as the snapshot shows it, then live updates
 * after the snapshot. Storage and snapshot must describe one moment, or a model response stored
 * between the two would be sent twice (stored, and as the draft); a read is taken as consistent
 * when the turn's stored messages did not change across the snapshot.
 */
export async function replayTurn(session: SessionAccess, storage: SessionStorage, turnId: string, messageId: string): Promise<PreparedTurn> {
  const records = new TurnRecords(storage, session.id, turnId);
  const translator = new UiMessageTranslator(turnId, records);
  const snapshot = await consistentSnapshot(session, records);
  const opening = translator.start(messageId);
  const view = snapshot.runtime;
  if (view.kind === 'running' && view.turnId === turnId) opening.push(...translator.replay(view, null));
  else if (view.kind === 'terminal' && view.turnId === turnId) opening.push(...translator.replay(null, view.outcome));
  else {
    const status = await session.turnState(turnId, 0);
    if (status.ok && status.outcome) opening.push(...translator.replay(null, status.outcome));
    else if (!status.ok || (status.status !== 'queued' && status.status !== 'running')) {
      opening.push(...translator.interrupted(`the turn ended without an outcome (${status.ok ? status.status : 'unknown turn'})`));
    }
    // Otherwise it waits in the queue, or started after the snapshot: its updates come live.
  }
  return { turnId, translator, records, opening, floor: snapshot.lastUpdateSequence };
}

/** The snapshot, with the records read up to the same moment (or as near as the attempts get). */
async function consistentSnapshot(session: SessionAccess, records: TurnRecords): Promise<SessionSnapshot> {
  for (let attempt = 1; ; attempt++) {
    await records.refresh();
    const before = records.size;
    const snapshot = await session.snapshot();
    await records.refresh();
    if (records.size === before || attempt >= CONSISTENT_READ_ATTEMPTS) return snapshot;
  }
}

export interface ChunkStreamOptions {
  /** Bytes of chunks a client may fall behind by before it is disconnected (it can resume). */
  bufferBytes: number;
  /** Drops the client's connection at once; without it the stream errors. */
  disconnect?: () => void;
  /** Told when the client is cut off for falling behind (`SseOptions.lagged`). */
  lagged?: () => void;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
}

/** Updates that name a tool call whose arguments or result must be read from storage first. */
const READS_RECORDS = new Set(['tool_call_started', 'tool_call_finished', 'permission_requested', 'turn_finished']);

/**
 * The prepared turn as a stream of UI message chunks: the opening, then each later update of the
 * turn translated, until the response ends (the turn's end, or an approval request). Closing the
 * connection only unsubscribes; the turn goes on.
 */
export function uiChunkStream(tap: UpdateTap, turn: PreparedTurn, options: ChunkStreamOptions): ReadableStream<UIMessageChunk> {
  let stopped = false;
  const stop = () => {
    stopped = true;
    tap.close();
  };
  return new ReadableStream<UIMessageChunk>(
    {
      start(controller) {
        options.signal?.addEventListener('abort', stop, { once: true });
        // Checked before a batch goes out, as for the event stream: a client that is caught up gets even a large one.
        const send = (chunks: UIMessageChunk[]): boolean => {
          if (stopped) return false;
          if ((controller.desiredSize ?? 0) < 0) {
            stop();
            options.lagged?.();
            if (options.disconnect) options.disconnect();
            else controller.error(new Error('the client fell too far behind'));
            return false;
          }
          for (const chunk of chunks) controller.enqueue(chunk);
          return true;
        };
        send(turn.opening);
        void follow(tap, turn, send).finally(() => {
          const open = !stopped;
          stop();
          if (open) controller.close();
        });
      },
      cancel() {
        stop();
      },
    },
    { highWaterMark: options.bufferBytes, size: (chunk) => JSON.stringify(chunk).length },
  );
}

async function follow(tap: UpdateTap, turn: PreparedTurn, send: (chunks: UIMessageChunk[]) => boolean): Promise<void> {
  const { translator, records } = turn;
  try {
    while (!translator.ended) {
      const batch = await tap.take();
      if (batch === null) {
        send(translator.interrupted('the session closed before the turn ended'));
        return;
      }
      for (const envelope of batch) {
        if (envelope.turnId !== turn.turnId || envelope.sequence <= turn.floor) continue;
        if (READS_RECORDS.has(envelope.update.type)) await records.refresh();
        if (!send(translator.next(envelope)) || translator.ended) return;
      }
    }
  } catch (error) {
    send(translator.interrupted(`storage unavailable: ${messageOf(error)}`));
  }
}
