import { createInterface } from 'node:readline';
import type { ChatController } from './chat-controller.js';
import type { Screen } from './chat-screen.js';

export interface InputOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  screen: Screen;
  controller: ChatController;
  /** Lines wait for this first (the session being opened). */
  startup?: Promise<void>;
  /** Where Ctrl+C arrives as a signal (a pipe, `kill -INT`); a terminal's comes through readline. */
  signals?: NodeJS.EventEmitter;
}

/**
 * The input loop: lines from the terminal (or a pipe) go to the controller one at a time, Ctrl+C
 * interrupts, Ctrl+D or the end of the input leaves. Resolves when the chat should exit.
 *
 * From a terminal every line is taken as it is typed (text typed while a turn runs is sent, and the
 * host answers by its busy policy). From a pipe the input is a script: each line waits until the
 * previous turn has ended or asks for an approval, and the end of the input waits for the running
 * turn before leaving.
 */
export function runInputLoop(options: InputOptions): Promise<void> {
  const { input, output, screen, controller } = options;
  const interactive = Boolean(input.isTTY) && screen.tty;
  const readline = createInterface({ input, output, terminal: interactive, historySize: interactive ? 200 : 0 });
  screen.bindPrompt(readline);
  const signals = options.signals ?? process;

  return new Promise<void>((resolve) => {
    let done = false;
    let lines: Promise<void> = (options.startup ?? Promise.resolve()).catch(() => undefined);
    const leave = (): void => {
      if (done) return;
      done = true;
      signals.off('SIGINT', onInterrupt);
      signals.off('SIGTERM', leave);
      signals.off('SIGHUP', leave);
      readline.close();
      resolve();
    };
    const onInterrupt = (): void => {
      if (done) return;
      if (interactive) {
        // Drop what was typed: to the end of the line, then back to its start.
        readline.write(null as unknown as string, { ctrl: true, name: 'e' });
        readline.write(null as unknown as string, { ctrl: true, name: 'u' });
      }
      void controller
        .interrupt()
        .then((result) => result === 'exit' && leave())
        .catch(() => undefined);
    };
    readline.on('line', (line) => {
      // A terminal echoed the line as it was typed; a script's line is echoed when its turn comes.
      if (interactive) screen.promptAnswered(line, true);
      lines = lines
        .then(async () => {
          if (done) return;
          if (!interactive) {
            await controller.inputReady();
            screen.promptAnswered(line, false);
          }
          if ((await controller.submit(line)) === 'exit') leave();
        })
        .catch(() => undefined);
    });
    readline.on('SIGINT', onInterrupt);
    signals.on('SIGINT', onInterrupt);
    // Asked to stop, or the terminal went away: leave the way /exit does (an embedded turn is stopped, its command killed).
    signals.on('SIGTERM', leave);
    signals.on('SIGHUP', leave);
    readline.on('close', () => {
      if (done) return;
      if (interactive) return leave();
      // The end of a script: the lines read so far are taken, then the running turn is waited for.
      void lines
        .then(async () => {
          while (!done && controller.busy && !controller.awaitingApproval) await controller.inputReady();
          if (!controller.awaitingApproval) return;
          screen.forgetPrompt();
          screen.line('the input ended with an approval pending');
        })
        .catch(() => undefined)
        .finally(leave);
    });
  });
}
