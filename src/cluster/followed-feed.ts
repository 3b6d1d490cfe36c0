import type { FeedSink, FeedStart, UpdateFeed } from '../host/session-access.js';
import type { UpdateEnvelope } from '../protocol/updates.js';

/**
 * One event stream's view of a session another host owns: live updates from the updates exchange,
 * held until the stream subscribes, then passed on strictly in sequence after the feed's start.
 * An update already covered is a duplicate and is dropped; one that skips a number means something
 * was lost on the way (a broker reconnect), and the feed ends so the client resumes with its last
 * id and gets the gap from the owner's replay.
 */
export class FollowedFeed implements UpdateFeed {
  private sink: FeedSink | null = null;
  private readonly early: UpdateEnvelope[] = [];
  private ended = false;
  private last = 0;
  private started: FeedStart | null = null;

  constructor(
    readonly sessionId: string,
    readonly ownerId: string,
    /** Told once when the feed ends, for whatever reason. */
    private readonly onEnd: (feed: FollowedFeed) => void,
  ) {}

  get start(): FeedStart {
    if (!this.started) throw new Error('the feed has not started');
    return this.started;
  }

  /** Where the owner says the stream starts; live updates are measured against it. */
  begin(start: FeedStart): void {
    this.started = start;
    // A snapshot_required may carry the continuation after it (issue 26): live updates follow that.
    const updates = start.kind === 'snapshot' ? [] : (start.updates ?? []);
    this.last = updates.at(-1)?.sequence ?? (start.kind === 'replay' ? start.after : start.snapshot.lastUpdateSequence);
  }

  update(envelope: UpdateEnvelope): void {
    if (this.ended) return;
    if (this.sink) this.pass(envelope);
    else this.early.push(envelope);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.early.length = 0;
    this.sink?.end();
    this.onEnd(this);
  }

  subscribe(sink: FeedSink): () => void {
    this.sink = sink;
    for (const envelope of this.early.splice(0)) this.pass(envelope);
    if (this.ended) sink.end();
    return () => {
      this.sink = null;
      this.end();
    };
  }

  private pass(envelope: UpdateEnvelope): void {
    if (envelope.sequence <= this.last) return;
    if (envelope.sequence !== this.last + 1) return this.end();
    this.last = envelope.sequence;
    this.sink?.update(envelope);
  }
}
