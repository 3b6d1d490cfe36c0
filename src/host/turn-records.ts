import type { SessionStorage } from '../../storage/session-storage.js';
import type { ChatMessage, ToolResultStatus } from '../protocol/messages.js';

export interface RecordedCall {
  id: string;
  name: string;
  /** The parsed arguments; the raw text when they are not JSON. */
  input: unknown;
}

/** One model response of the turn, as stored. */
export interface RecordedStep {
  text: string;
  reasoning: string;
  calls: RecordedCall[];
}

export interface RecordedResult {
  status: ToolResultStatus;
  content: string;
}

/** What storage holds of one turn so far: what the update envelopes leave out (tool arguments and results). */
export interface TurnRecordsView {
  steps(): readonly RecordedStep[];
  call(toolCallId: string): RecordedCall | undefined;
  result(toolCallId: string): RecordedResult | undefined;
}

/**
 * A turn's stored assistant messages and tool results, read page by page after the last message
 * seen. Updates carry a tool call's id but not its arguments or result; both are stored before
 * the update that names them goes out, so a refresh after the update finds them.
 */
export class TurnRecords implements TurnRecordsView {
  private after = -1;
  private seen = 0;
  private readonly stepList: RecordedStep[] = [];
  private readonly calls = new Map<string, RecordedCall>();
  private readonly results = new Map<string, RecordedResult>();
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: SessionStorage,
    private readonly sessionId: string,
    private readonly turnId: string,
    private readonly pageSize = 200,
  ) {}

  /** Messages of the turn read so far: a change between two refreshes means storage moved on. */
  get size(): number {
    return this.seen;
  }

  steps(): readonly RecordedStep[] {
    return this.stepList;
  }

  call(toolCallId: string): RecordedCall | undefined {
    return this.calls.get(toolCallId);
  }

  result(toolCallId: string): RecordedResult | undefined {
    return this.results.get(toolCallId);
  }

  /** Reads what was stored since the last refresh; refreshes never overlap. */
  refresh(): Promise<void> {
    // A failed read is the caller's to report; the next refresh starts afresh from the last page read.
    this.reading = this.reading.catch(() => undefined).then(() => this.readNew());
    return this.reading;
  }

  private async readNew(): Promise<void> {
    for (;;) {
      const page = await this.storage.listMessages(this.sessionId, { afterSequence: this.after, limit: this.pageSize });
      for (const stored of page) {
        this.after = Math.max(this.after, stored.sequence);
        if (stored.turnId === this.turnId) this.take(stored.message);
      }
      if (page.length < this.pageSize) return;
    }
  }

  private take(message: ChatMessage): void {
    this.seen += 1;
    if (message.role === 'assistant') {
      const calls = message.toolCalls.map((call) => ({ id: call.id, name: call.name, input: parseArguments(call.argumentsText) }));
      for (const call of calls) this.calls.set(call.id, call);
      this.stepList.push({ text: message.text, reasoning: message.reasoning, calls });
    } else if (message.role === 'tool') {
      this.results.set(message.toolCallId, { status: message.status, content: message.content });
    }
  }
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
