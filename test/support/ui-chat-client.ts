import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';

/**
 * The AI SDK's own client pieces, as a `useChat` front end drives them, pointed at a test host:
 * `DefaultChatTransport` sends and reconnects, `readUIMessageStream` folds a response into the
 * assistant message. Nothing here reads the protocol by hand.
 */
export class UiChatClient {
  /** Every response the transport received, for its status and headers. */
  readonly responses: Response[] = [];
  readonly transport: DefaultChatTransport<UIMessage>;

  constructor(
    url: string,
    readonly chatId: string,
    token?: string,
  ) {
    this.transport = new DefaultChatTransport({
      api: `${url}/api/chat`,
      ...(token && { headers: { Authorization: `Bearer ${token}` } }),
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        this.responses.push(response);
        return response;
      },
    });
  }

  /** Sends the conversation as `useChat` does after `sendMessage` (or after an approval answer). */
  send(messages: UIMessage[], trigger: 'submit-message' | 'regenerate-message' = 'submit-message'): Promise<ReadableStream<UIMessageChunk>> {
    return this.transport.sendMessages({ chatId: this.chatId, messages, trigger, messageId: undefined, abortSignal: undefined });
  }

  reconnect(): Promise<ReadableStream<UIMessageChunk> | null> {
    return this.transport.reconnectToStream({ chatId: this.chatId });
  }
}

export interface Folded {
  message: UIMessage;
  /** The chunks' types in order (as the transport parsed them), to see how the response ended. */
  types: string[];
  errors: string[];
}

/** Folds a response into its assistant message, continuing `message` when given (an approval answered). */
export async function fold(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<Folded> {
  const [forMessage, forTypes] = stream.tee();
  const types: string[] = [];
  const typesRead = (async () => {
    for await (const chunk of forTypes) types.push(chunk.type);
  })();
  const errors: string[] = [];
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream({ stream: forMessage, ...(message && { message }), onError: (error) => errors.push(String(error)) })) {
    last = snapshot;
  }
  await typesRead;
  if (!last) throw new Error(`the response folded into no message (chunks: ${types.join(', ')})`);
  return { message: last, types, errors };
}

export function userMessage(id: string, text: string): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

type ToolPart = Extract<UIMessage['parts'][number], { toolCallId: string }>;

export function toolParts(message: UIMessage): ToolPart[] {
  return message.parts.filter((part): part is ToolPart => 'toolCallId' in part);
}

export function texts(message: UIMessage): string[] {
  return message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : []));
}

/** The assistant message as `addToolApprovalResponse({ id, approved, reason })` leaves it in the client. */
export function answerApproval(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) =>
      'toolCallId' in part && part.state === 'approval-requested'
        ? ({ ...part, state: 'approval-responded', approval: { ...part.approval, approved, ...(reason !== undefined && { reason }) } } as ToolPart)
        : part,
    ),
  };
}
