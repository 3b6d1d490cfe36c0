/** One stored message as either backend pages it: its sequence and the message. */
export interface StoredPage {
  messages: { sequence: number; message: { role: string; toolCalls?: unknown } }[];
}

export interface KnownCall {
  name: string;
  argumentsText: string;
}

/**
 * The arguments of a session's tool calls, read from its stored assistant messages. Updates carry a
 * call's id and name only; the assistant message holding the call is stored before the call starts,
 * so reading the messages stored since the last look finds it. One index per session.
 */
export class ToolCallIndex {
  private after = -1;
  private readonly calls = new Map<string, KnownCall>();

  constructor(
    private readonly page: (afterSequence: number, limit: number) => Promise<StoredPage>,
    private readonly pageSize = 200,
  ) {}

  async find(toolCallId: string): Promise<KnownCall | null> {
    const known = this.calls.get(toolCallId);
    if (known) return known;
    for (;;) {
      const { messages } = await this.page(this.after, this.pageSize);
      for (const { sequence, message } of messages) {
        this.after = Math.max(this.after, sequence);
        if (message.role !== 'assistant' || !Array.isArray(message.toolCalls)) continue;
        for (const call of message.toolCalls as { id?: unknown; name?: unknown; argumentsText?: unknown }[]) {
          if (typeof call.id === 'string' && typeof call.name === 'string') {
            this.calls.set(call.id, { name: call.name, argumentsText: typeof call.argumentsText === 'string' ? call.argumentsText : '' });
          }
        }
      }
      if (messages.length < this.pageSize) break;
    }
    return this.calls.get(toolCallId) ?? null;
  }
}
