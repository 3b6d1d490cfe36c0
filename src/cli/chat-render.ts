import type { SnapshotFrom } from 'xstate';
import type { CallArguments, ChatNotice } from '../../machines/chat-client.effects.js';
import type { chatClientMachine } from '../../machines/chat-client.machine.js';
import type { TurnPhase, TurnResumeReason, UpdateEnvelope } from '../protocol/updates.js';
import { formatAgents, formatContext, formatError, formatGuardrail, formatOutcome, formatPlan, formatSessions, HELP, summarizeArguments, type Paint } from './chat-format.js';

/**
 * What the chat prints, as pure functions: a notice of the chart (an update envelope with what the
 * chart knows about it, an error, a command's answer…) and what the screen shows now → the output
 * to write, and the prompt and spinner the chart's state calls for. No I/O: `Screen` writes it.
 */

export const INPUT_PROMPT = '› ';
export const APPROVAL_PROMPT = '[a]llow once / [d]eny › ';

const SPINNER: Partial<Record<TurnPhase, string>> = {
  starting: 'starting…',
  running_model: 'thinking…',
  running_tools: 'running tools…',
  compacting: 'compacting…',
};

/** One piece of output. */
export type Print =
  /** A whole line, on a line of its own. */
  | { kind: 'line'; text: string }
  /** Streamed text (a model's deltas): no newline added. */
  | { kind: 'text'; text: string }
  /** Ends a streamed line, if one is open. */
  | { kind: 'end_line' }
  /** A line taken at the prompt: `typed` on a terminal, which echoed it; else written after its prompt. */
  | { kind: 'echo'; prompt: string; line: string; typed: boolean };

/** What the output shows that the next notice depends on. */
export interface RenderView {
  /** A streamed line is open, of the answer's text or of its reasoning. */
  streaming: 'text' | 'reasoning' | null;
  /** Tool calls started and not finished, by id: an update finishing one carries only its id. */
  toolNames: Readonly<Record<string, string>>;
  /**
   * The connection to the host was lost and the chat said "the host moved; resuming": the reconnect,
   * the catch-up and the turn's `turn_resumed` are part of that one line and say nothing more.
   */
  moved?: true;
}

export const EMPTY_VIEW: RenderView = { streaming: null, toolNames: {} };

export interface RenderStyle {
  paint: Paint;
  /** Whether styles show: without them, dimmed reasoning is marked where it starts. */
  color: boolean;
}

export interface Rendered {
  view: RenderView;
  print: Print[];
}

/** The one line a chat against a host prints when the host goes away (issue 26): it goes on by itself. */
export const HOST_MOVED = 'the host moved; resuming';

const RESUMED: Record<TurnResumeReason, string> = {
  host_restarted: 'its host restarted',
  owner_lost: 'its host was lost, another took the session',
  reopened: 'the session was opened again',
};

/** A notice as output, and the view after it. */
export function render(notice: ChatNotice, view: RenderView, style: RenderStyle): Rendered {
  const { paint } = style;
  /** Whole lines: a streamed line still open is ended first. */
  const lines = (...texts: string[]): Rendered => ({
    view: view.streaming ? { ...view, streaming: null } : view,
    print: [...(view.streaming ? [{ kind: 'end_line' } as const] : []), ...texts.map((text) => ({ kind: 'line', text }) as const)],
  });
  switch (notice.kind) {
    case 'update':
      return renderUpdate(notice.envelope, notice, view, style);
    case 'session_opened':
      return {
        view: EMPTY_VIEW,
        print: [
          ...(view.streaming ? [{ kind: 'end_line' } as const] : []),
          { kind: 'line', text: `${paint('bold', `session ${notice.sessionId}`)} ${paint('dim', `(${notice.created ? 'new' : 'continued'}, mode ${notice.mode}${notice.agent ? `, agent ${notice.agent}` : ''})`)}` },
        ],
      };
    case 'line_taken':
      return { view, print: [{ kind: 'echo', prompt: notice.atApproval ? APPROVAL_PROMPT : INPUT_PROMPT, line: notice.line, typed: notice.typed }] };
    case 'error':
      return lines(formatError(notice.error, paint));
    case 'connection_lost': {
      // Why it broke (refused, reset, ended) is not the user's concern: the feed and the requests
      // retry until the host, or another behind the same URL, answers (chat-sse.ts, chat-http.ts).
      const said = lines(paint('yellow', HOST_MOVED));
      return { ...said, view: { ...said.view, moved: true } };
    }
    case 'connection_restored':
      return { view, print: [] };
    case 'feed_ended':
      return lines(`${formatError(notice.error, paint)} ${paint('dim', '— no more live updates from this session')}`);
    case 'caught_up':
      // After a move the host resumes from a snapshot: the turn goes on on screen, and the one line said enough.
      return view.moved ? { view, print: [] } : lines(paint('dim', 'some updates were missed while disconnected; caught up from the session snapshot'));
    case 'turn_running':
      return lines(paint('dim', `a turn is running (${notice.turnId}, ${notice.phase})`));
    case 'approval_needed':
      return lines(approvalLine(notice.name, notice.paths, paint));
    case 'outcome':
      return lines(formatOutcome(notice.outcome, paint));
    case 'cancelling':
      return lines(paint('yellow', 'cancelling…'));
    case 'exit_hint':
      return lines(paint('dim', '(Ctrl+C again or Ctrl+D to exit)'));
    case 'turn_queued':
      return lines(paint('dim', `queued behind the running turn (${notice.turnId})`));
    case 'sent_while_running':
      return lines(paint('dim', `(a turn is running; the host decides by the session's busy policy)`));
    case 'help':
      return lines(...HELP);
    case 'no_session':
      return lines(paint('yellow', 'no session: /new starts one, /open ID continues one'));
    case 'bad_answer':
      return lines(paint('yellow', 'answer a (allow once) or d (deny)'));
    case 'usage':
      return lines(paint('yellow', `usage: ${notice.usage}`));
    case 'unknown_command':
      return lines(paint('yellow', `unknown command /${notice.name} (/help lists them)`));
    case 'busy':
      return lines(paint('yellow', 'a turn is running: Ctrl+C cancels it first'));
    case 'mode':
      return lines(`mode: ${notice.mode ?? 'unknown'}`);
    case 'compacting':
      return lines(paint('dim', 'compacting…'));
    case 'command_done': {
      const { result } = notice;
      switch (result.kind) {
        case 'sessions_listed':
          return lines(...formatSessions(result.sessions, notice.sessionId, paint));
        case 'agents_listed':
          return lines(...formatAgents(result.agents, paint));
        case 'mode_set':
          return lines(paint('green', `mode: ${result.mode}`) + paint('dim', ' (from the next tool call on)'));
        case 'compacted':
          return lines(paint('green', `compacted (checkpoint ${result.compactionId})`));
        case 'context_read':
          return lines(...formatContext(result.usage, paint));
      }
      break;
    }
    case 'input_ended_at_approval':
      return lines('the input ended with an approval pending');
    case 'leaving_turn':
      return lines(
        paint(
          'yellow',
          notice.backend === 'host' ? `the running turn ${notice.turnId} goes on on the host` : `the running turn ${notice.turnId} ends with this process (actor_stopped)`,
        ),
      );
  }
  return { view, print: [] };
}

/** One update: the answer's text as it streams, a line for each other thing that happened. */
function renderUpdate(
  envelope: UpdateEnvelope,
  facts: { call: CallArguments | null; startedElsewhere: boolean },
  view: RenderView,
  { paint, color }: RenderStyle,
): Rendered {
  const { update, turnId } = envelope;
  const print: Print[] = [];
  let { streaming, toolNames, moved } = view;
  const endStream = (): void => {
    if (streaming) print.push({ kind: 'end_line' });
    streaming = null;
  };
  const line = (text: string): void => {
    endStream();
    print.push({ kind: 'line', text });
  };
  switch (update.type) {
    case 'turn_started':
      moved = undefined;
      if (facts.startedElsewhere) line(paint('dim', `a turn started from elsewhere (${turnId})`));
      break;
    case 'turn_resumed':
      // A draft still open died with the old host; the continuation streams its own.
      endStream();
      if (moved) moved = undefined;
      else line(paint('dim', `the turn resumes: ${RESUMED[update.reason]}`));
      break;
    case 'phase_changed':
      if (update.phase === 'compacting') line(paint('dim', 'compacting the conversation…'));
      break;
    case 'text_delta':
      if (streaming === 'reasoning') endStream();
      streaming = 'text';
      if (update.text !== '') print.push({ kind: 'text', text: update.text });
      break;
    case 'reasoning_delta':
      if (streaming === 'text') endStream();
      // Dimmed; without styles, marked where it starts.
      if (streaming !== 'reasoning' && !color) print.push({ kind: 'text', text: '(reasoning) ' });
      streaming = 'reasoning';
      if (update.text !== '') print.push({ kind: 'text', text: paint(['dim', 'italic'], update.text) });
      break;
    case 'draft_cleared':
      // The draft became the stored answer, or was dropped (a compaction follows then, and says so).
      endStream();
      break;
    case 'tool_call_started': {
      toolNames = { ...toolNames, [update.toolCallId]: update.name };
      const summary = facts.call ? summarizeArguments(facts.call.argumentsText) : '';
      line(`${paint('cyan', '▸')} ${paint('bold', update.name)}${summary ? `  ${paint('dim', summary)}` : ''}`);
      break;
    }
    case 'tool_call_progress': {
      // Progress in the MCP shape (`{ progress, total?, message? }`, what MCP tools report): one dim line per report.
      const said = progressText(update.progress);
      if (said !== null) line(paint('dim', `  ⋯ ${toolNames[update.toolCallId] ?? 'tool'} ${said}`));
      break;
    }
    case 'tool_call_finished': {
      const { [update.toolCallId]: name = 'tool', ...rest } = toolNames;
      toolNames = rest;
      const ok = update.status === 'succeeded';
      const hue = ok ? 'green' : update.status === 'denied' || update.status === 'cancelled' ? 'yellow' : 'red';
      line(`  ${paint(hue, `${ok ? '✓' : '✗'} ${name} ${update.status}`)}`);
      break;
    }
    case 'permission_requested':
      line(approvalLine(update.name, update.paths, paint));
      break;
    case 'permission_resolved': {
      const said = {
        allow_once: 'allowed once',
        deny: 'denied',
        cancelled: 'approval withdrawn: the turn was cancelled',
        actor_stopped: 'approval withdrawn: the session stopped',
        expired: 'denied: nobody answered before the approval expired',
      }[update.decision];
      line(paint('dim', `  ${said}`));
      break;
    }
    case 'plan_updated':
      for (const text of formatPlan(update.plan, paint)) line(text);
      break;
    // Issue 30: a `switch_agent` call handed the run over; the next model call is the new agent's.
    case 'agent_switched':
      line(paint('dim', `agent switched: ${update.from} → ${update.to}`));
      break;
    case 'queue_updated':
      if (update.queue.length > 0) line(paint('dim', `${update.queue.length} turn(s) queued`));
      break;
    case 'guardrail_triggered':
      line(formatGuardrail(update, paint));
      break;
    case 'turn_finished':
      moved = undefined;
      line(formatOutcome(update.outcome, paint));
      break;
  }
  const same = streaming === view.streaming && toolNames === view.toolNames && moved === view.moved;
  return { view: same ? view : { streaming, toolNames, ...(moved && { moved }) }, print };
}

/** `2/5 copying` from `{ progress: 2, total: 5, message: 'copying' }`; null for any other shape. */
function progressText(progress: unknown): string | null {
  const p = progress as { progress?: unknown; total?: unknown; message?: unknown } | null;
  if (typeof p !== 'object' || p === null || typeof p.progress !== 'number') return null;
  const count = typeof p.total === 'number' ? `${p.progress}/${p.total}` : String(p.progress);
  return typeof p.message === 'string' && p.message !== '' ? `${count} ${p.message.slice(0, 200)}` : count;
}

function approvalLine(name: string, paths: string[], paint: Paint): string {
  const where = paths.length > 0 ? `: ${paths.join(', ')}` : '';
  return `${paint('yellow', '?')} ${paint('bold', name)} needs your approval${where}`;
}

/** What the screen shows besides the output, as the chart's state has it. */
export interface ScreenState {
  /** The prompt that takes the next line, or null when no line is taken now. */
  prompt: string | null;
  /** What the spinner says (on a terminal), or null. */
  spinner: string | null;
}

type ChatSnapshot = SnapshotFrom<typeof chatClientMachine>;

/**
 * The prompt shows while a line would be taken at once and more input may come — never once the
 * input ended, so a closed input is never prompted; the approval prompt while the turn asks. The
 * spinner runs while a turn is being started or runs (not while it asks).
 */
export function screenOf(snapshot: ChatSnapshot): ScreenState {
  if (snapshot.status !== 'active' || !snapshot.matches({ active: 'session' })) return { prompt: null, spinner: null };
  const { context } = snapshot;
  const asking = snapshot.matches({ active: { session: { turn: 'asking' } } });
  const idle = snapshot.matches({ active: { session: { turn: 'idle' } } });
  const waiting = snapshot.matches({ active: { session: { lines: 'waiting' } } });
  const connecting = snapshot.matches({ active: { session: { link: { following: 'connecting' } } } });
  const prompt = !context.inputOpen || !waiting || connecting ? null : asking ? APPROVAL_PROMPT : idle ? INPUT_PROMPT : null;
  const working = snapshot.matches({ active: { session: { lines: 'starting_turn' } } }) || snapshot.matches({ active: { session: { turn: 'running' } } });
  const spinner = working && !asking ? (SPINNER[context.phase ?? 'starting'] ?? null) : null;
  return { prompt, spinner };
}
