import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

/**
 * Hands a transport's messages to the SDK's client in the order they arrived. The client runs a
 * notification's handler a microtask after it arrives but settles a response at once, so a
 * server's last progress notifications, read in the same chunk as its response, would reach a
 * handler already removed ("unknown token") and be lost. Delivering responses one microtask later
 * puts them behind the notifications read before them.
 */
export class OrderedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  constructor(readonly inner: Transport) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
      if ('method' in message) this.onmessage?.(message, extra);
      else queueMicrotask(() => this.onmessage?.(message, extra));
    };
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion = (version: string): void => this.inner.setProtocolVersion?.(version);

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
