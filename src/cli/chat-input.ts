import { createInterface } from 'node:readline';
import type { InputEvent } from '../../machines/chat-client.machine.js';
import type { Screen } from './chat-screen.js';

export interface InputOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  screen: Screen;
  /** Lines from a terminal, typed and echoed there (`isInteractive`), rather than a script. */
  interactive: boolean;
  /** Where the input's events go: the chat chart. */
  send: (event: InputEvent) => void;
  /** Where Ctrl+C arrives as a signal (a pipe, `kill -INT`); a terminal's comes through readline. */
  signals?: NodeJS.EventEmitter;
  now?: () => number;
}

export interface InputLoop {
  /** Stops listening (the chat ended) and closes the readline interface. */
  close(): void;
}

/** Input from a terminal, with output to one: lines are edited there and echoed by it. */
export function isInteractive(input: { isTTY?: boolean }, screen: Screen): boolean {
  return Boolean(input.isTTY) && screen.tty;
}

/**
 * The input as the chart's events: each line entered (`input.line_entered`), Ctrl+C
 * (`input.interrupted`, when it came), the end of the input — Ctrl+D, or the end of a script —
 * (`input.ended`), and SIGTERM or a closed terminal (`chat.leave`). What they mean, and when a
 * script's next line is taken, is the chart's business.
 */
export function startInput(options: InputOptions): InputLoop {
  const { input, output, screen, send, interactive } = options;
  const readline = createInterface({ input, output, terminal: interactive, historySize: interactive ? 200 : 0 });
  screen.bindPrompt(readline);
  const signals = options.signals ?? process;
  const now = options.now ?? Date.now;
  let closed = false;

  const onInterrupt = (): void => {
    if (interactive) {
      // Drop what was typed: to the end of the line, then back to its start.
      readline.write(null as unknown as string, { ctrl: true, name: 'e' });
      readline.write(null as unknown as string, { ctrl: true, name: 'u' });
    }
    send({ type: 'input.interrupted', atMs: now() });
  };
  // Asked to stop, or the terminal went away: leave the way /exit does (an embedded turn is stopped, its command killed).
  const onLeave = (): void => send({ type: 'chat.leave' });
  readline.on('line', (line) => send({ type: 'input.line_entered', line }));
  readline.on('SIGINT', onInterrupt);
  readline.on('close', () => {
    if (!closed) send({ type: 'input.ended' });
  });
  signals.on('SIGINT', onInterrupt);
  signals.on('SIGTERM', onLeave);
  signals.on('SIGHUP', onLeave);

  return {
    close: () => {
      if (closed) return;
      closed = true;
      signals.off('SIGINT', onInterrupt);
      signals.off('SIGTERM', onLeave);
      signals.off('SIGHUP', onLeave);
      readline.close();
    },
  };
}
