import { styleText } from 'node:util';
import type { Interface } from 'node:readline';
import { plain, type Paint } from './chat-format.js';
import type { Print } from './chat-render.js';

export interface ScreenOptions {
  /** Cursor control and a spinner: only when the output is a terminal. */
  tty: boolean;
  /** Colors and dim text (a TTY without NO_COLOR). */
  color: boolean;
  spinnerIntervalMs?: number;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Everything the chat writes goes through here, so streamed text, whole lines, the spinner and the
 * input prompt never overwrite one another. On a terminal the spinner takes the empty line under the
 * output while the model works and is wiped before anything else is written; a line printed while
 * the prompt is shown (a note from the connection) goes above it and the prompt is drawn again with
 * what was typed so far. Without a terminal the output is plain lines, no escape codes.
 *
 * The chat's own output comes as `print` (from the renderer) and `setPrompt` (from the chart's state
 * after each step): a prompt that a print hid is drawn again by the `setPrompt` that follows, only
 * if the chart still wants it. A closed readline interface is never prompted (Node 24 throws
 * `ERR_USE_AFTER_CLOSE`): once its input ended, a prompt is plain text.
 */
export class Screen {
  readonly paint: Paint;
  private atLineStart = true;
  private prompt: { text: string; shown: boolean } | null = null;
  private readline: Interface | null = null;
  private spinnerLabel: string | null = null;
  private spinnerShown = false;
  private frame = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly options: ScreenOptions,
  ) {
    this.paint = options.color ? (format, text) => styleText(format, text) : plain;
    // A closed pipe on the other end is not a crash.
    out.on('error', () => undefined);
  }

  get tty(): boolean {
    return this.options.tty;
  }

  /** Whether styles show: without them, dimmed text needs another mark. */
  get color(): boolean {
    return this.options.color;
  }

  /** The readline interface whose prompt this screen shows and redraws, until it closes. */
  bindPrompt(readline: Interface): void {
    this.readline = readline;
    readline.once('close', () => {
      if (this.readline === readline) this.readline = null;
    });
  }

  /** The chat's output, in order. A prompt showing is taken away first; `setPrompt` draws it again. */
  print(output: readonly Print[]): void {
    for (const item of output) {
      switch (item.kind) {
        case 'line':
          this.clearTransient();
          if (this.prompt?.shown) this.hidePrompt();
          if (!this.atLineStart) this.out.write('\n');
          this.out.write(`${item.text}\n`);
          this.atLineStart = true;
          break;
        case 'text':
          this.write(item.text);
          break;
        case 'end_line':
          this.endLine();
          break;
        case 'echo':
          this.echo(item.prompt, item.line, item.typed);
          break;
      }
    }
  }

  /** Shows this prompt (null: none), unless it already shows. */
  setPrompt(text: string | null): void {
    if (text === null) this.forgetPrompt();
    else if (this.promptShown !== text) this.showPrompt(text);
  }

  /** Streams text as it comes (a model's deltas): no newline added. */
  write(text: string): void {
    if (text === '') return;
    this.clearTransient();
    if (this.prompt?.shown) this.hidePrompt();
    this.out.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  /** A whole line, on a line of its own; a prompt that was showing is drawn again under it. */
  line(text = ''): void {
    this.clearTransient();
    const prompt = this.prompt?.shown ? this.prompt.text : null;
    if (prompt !== null) this.hidePrompt();
    if (!this.atLineStart) this.out.write('\n');
    this.out.write(`${text}\n`);
    this.atLineStart = true;
    if (prompt !== null) this.showPrompt(prompt);
  }

  /** Ends a streamed line, if one is open. */
  endLine(): void {
    if (!this.atLineStart) this.write('\n');
  }

  /** Shows the input prompt (on its own line) and waits for a line there. */
  showPrompt(text: string): void {
    this.clearTransient();
    if (!this.atLineStart) this.out.write('\n');
    this.prompt = { text, shown: true };
    if (this.readline) {
      this.readline.setPrompt(text);
      this.readline.prompt(true);
    } else this.out.write(text);
    this.atLineStart = false;
  }

  /**
   * A line was taken at the prompt. A terminal echoed it as it was typed (`typed`); from a pipe it
   * is written after its prompt (drawn first if it did not show), so the output reads as a transcript.
   */
  private echo(prompt: string, line: string, typed: boolean): void {
    const shown = this.prompt?.shown ? this.prompt.text : null;
    this.prompt = null;
    if (typed) {
      this.atLineStart = true;
      return;
    }
    this.clearTransient();
    if (shown !== prompt) {
      if (!this.atLineStart) this.out.write('\n');
      this.out.write(prompt);
    }
    this.out.write(`${line}\n`);
    this.atLineStart = true;
  }

  /** Takes the prompt away for good (the chat is ending). */
  forgetPrompt(): void {
    if (this.prompt?.shown) this.hidePrompt();
    this.prompt = null;
  }

  /** The prompt showing now, or null. */
  get promptShown(): string | null {
    return this.prompt?.shown ? this.prompt.text : null;
  }

  /** Sets what the spinner says, or stops it (null). Only drawn on a terminal. */
  spinner(label: string | null): void {
    this.spinnerLabel = this.options.tty ? label : null;
    if (this.spinnerLabel === null) {
      this.clearTransient();
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      return;
    }
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.options.spinnerIntervalMs ?? 100);
    this.timer.unref();
    this.tick();
  }

  /** Stops the spinner and leaves the cursor on an empty line. */
  close(): void {
    this.spinner(null);
    this.forgetPrompt();
    if (!this.atLineStart) this.out.write('\n');
    this.atLineStart = true;
  }

  private tick(): void {
    if (this.spinnerLabel === null || !this.atLineStart || this.prompt?.shown) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    this.out.write(`\r${this.paint('cyan', FRAMES[this.frame]!)} ${this.paint('dim', this.spinnerLabel)}\x1b[K`);
    this.spinnerShown = true;
  }

  private clearTransient(): void {
    if (!this.spinnerShown) return;
    this.out.write('\r\x1b[K');
    this.spinnerShown = false;
  }

  /** Takes the prompt line away: wiped on a terminal, ended with a newline in a pipe. */
  private hidePrompt(): void {
    if (!this.prompt) return;
    this.prompt.shown = false;
    if (this.options.tty) {
      this.out.write('\r\x1b[K');
      this.atLineStart = true;
    } else if (!this.atLineStart) {
      this.out.write('\n');
      this.atLineStart = true;
    }
  }
}
