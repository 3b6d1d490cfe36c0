import { readHistoryMirror } from '../../storage/history-mirror.js';
import type { ChatMessage } from '../protocol/messages.js';
import { formatError, formatSessions, summarizeArguments, type Paint } from './chat-format.js';
import type { Screen } from './chat-screen.js';

/** Messages read per query while a conversation is printed. */
const PAGE = 500;

/** Sessions listed when no `--session` is named. */
const LISTED = 200;

/**
 * Issue 30: `turnchart chat --db FILE` on a history mirror (`serve --mirror-sqlite`). The mirror is
 * opened read-only — it is a copy, and a turn run on it would belong nowhere — so the chat browses
 * instead of talking: the sessions newest first, or with `--session ID` that session's conversation.
 * Resolves with the exit code.
 */
export async function browseHistory(file: string, sessionId: string | undefined, screen: Screen): Promise<number> {
  const mirror = readHistoryMirror(file);
  const paint: Paint = (format, text) => screen.paint(format, text);
  try {
    screen.line(`${paint('bold', 'turnchart chat')} ${paint('dim', `— history mirror ${file}, read-only`)}`);
    if (sessionId === undefined) {
      const rows = await mirror.listSessions({ limit: LISTED });
      const sessions = rows.map((row) => ({ sessionId: row.id, agent: row.agent, permissionMode: row.permissionMode, createdAtMs: row.createdAtMs, status: 'mirrored', lastOutcome: null }));
      for (const line of formatSessions(sessions, null, paint)) screen.line(line);
      screen.line(paint('dim', 'chat --db FILE --session ID prints one session\'s conversation.'));
      return 0;
    }
    if (!(await mirror.getSession(sessionId))) {
      screen.line(formatError({ code: 'UnknownSession', message: `no session '${sessionId}' in the mirror` }, paint));
      return 1;
    }
    for (let after = -1; ; ) {
      const page = await mirror.listMessages(sessionId, { afterSequence: after, limit: PAGE });
      for (const stored of page) for (const line of transcriptLines(stored.message, paint)) screen.line(line);
      if (page.length < PAGE) break;
      after = page.at(-1)!.sequence;
    }
    for (const turn of await mirror.listTurns(sessionId)) {
      if (turn.status !== 'completed' && turn.status !== 'running') screen.line(paint('dim', `turn ${turn.id} ended ${turn.status}${turn.errorCode ? ` (${turn.errorCode})` : ''}`));
    }
    return 0;
  } finally {
    await mirror.close();
  }
}

/** One stored message as the chat prints it live: the user's words, the assistant's text and calls, each call's end. */
function transcriptLines(message: ChatMessage, paint: Paint): string[] {
  switch (message.role) {
    case 'user':
      // What the runtime adds to the conversation (world state, skill snapshots, notes) is not the user's.
      return message.kind === 'normal' ? [paint('bold', `› ${message.text}`)] : message.from ? [paint('dim', `${message.from} › ${message.text}`)] : [];
    case 'assistant':
      return [...(message.text ? [message.text] : []), ...message.toolCalls.map((call) => paint('cyan', `⚙ ${call.name} ${summarizeArguments(call.argumentsText)}`))];
    case 'tool':
      return [paint('dim', `  ↳ ${message.toolName} ${message.status}`)];
  }
}
