import { truncationNote } from './output-cap.js';

/**
 * A command's output, bounded while it is produced: the first half of the budget and the last
 * half are kept, the middle is counted and dropped. Both ends matter — the command line's echo at
 * the top, the error that stopped a build at the bottom.
 */
export class OutputCollector {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private readonly tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(maxBytes: number) {
    this.headLimit = Math.ceil(maxBytes / 2);
    this.tailLimit = Math.floor(maxBytes / 2);
  }

  add(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.headLimit - this.headBytes;
    if (room > 0) {
      const part = chunk.subarray(0, room);
      this.head.push(part);
      this.headBytes += part.length;
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    // Whole chunks are dropped only while what stays still fills the tail budget.
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.tailLimit) this.tailBytes -= this.tail.shift()!.length;
  }

  /** The output as text (invalid UTF-8 shown as U+FFFD), with a note where the middle was dropped. */
  text(): string {
    const tail = Buffer.concat(this.tail);
    const kept = tail.subarray(Math.max(0, tail.length - this.tailLimit));
    const shown = this.headBytes + kept.length;
    if (shown === this.total) return decode(Buffer.concat([...this.head, tail]));
    return `${decode(Buffer.concat(this.head))}${truncationNote(shown, this.total, 'bytes')}\n${decode(kept)}`;
  }
}

function decode(bytes: Buffer): string {
  return new TextDecoder('utf-8').decode(bytes);
}
