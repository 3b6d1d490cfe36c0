import type { styleText } from 'node:util';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { SessionUpdate } from '../protocol/updates.js';
import type { Plan } from '../protocol/plan.js';
import type { AgentSummary, ChatFailure, ContextUsage, SessionSummary } from '../../machines/chat-client.effects.js';

/** Styles text for the terminal: `styleText` on a TTY, the text unchanged otherwise. */
export type Paint = (format: Parameters<typeof styleText>[0], text: string) => string;

export const plain: Paint = (_format, text) => text;

/** The arguments worth showing first, as their bare value. */
const LEADING = ['command', 'path', 'pattern'];

/**
 * A one-line summary of a tool call's arguments: the command, path or pattern as it is, then the
 * other short values as `key: value` and long texts as their length; cut to `max` characters.
 */
export function summarizeArguments(argumentsText: string, max = 80): string {
  let args: unknown;
  try {
    args = JSON.parse(argumentsText);
  } catch {
    return clip(oneLine(argumentsText), max);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return clip(oneLine(argumentsText), max);
  const entries = Object.entries(args as Record<string, unknown>);
  const lead = LEADING.map((key) => entries.find(([name, value]) => name === key && typeof value === 'string')).find((entry) => entry !== undefined);
  const parts: string[] = lead ? [oneLine(lead[1] as string)] : [];
  for (const [key, value] of entries) {
    if (key === lead?.[0]) continue;
    if (typeof value === 'string') parts.push(value.length > 40 || value.includes('\n') ? `${key}: ${value.length} chars` : `${key}: ${value}`);
    else if (typeof value === 'number' || typeof value === 'boolean') parts.push(`${key}: ${String(value)}`);
    else if (Array.isArray(value)) parts.push(`${key}: ${value.length} item${value.length === 1 ? '' : 's'}`);
    else if (value !== null && value !== undefined) parts.push(`${key}: {…}`);
  }
  return clip(parts.join(', '), max);
}

/** How a turn ended, as one line. */
export function formatOutcome(outcome: TurnOutcome, paint: Paint = plain): string {
  switch (outcome.status) {
    case 'completed':
      return outcome.stoppedBy ? paint('yellow', `✓ completed, stopped early by the ${STOPPED_BY[outcome.stoppedBy]}`) : paint('green', '✓ completed');
    case 'cancelled':
      return paint('yellow', '✗ cancelled');
    case 'timed_out':
      return paint('red', `✗ timed out: ${oneLine(outcome.message)}`);
    case 'failed':
      return paint('red', `✗ failed [${outcome.code}] ${oneLine(outcome.message)}`);
  }
}

const STOPPED_BY = { mistake_limit: 'mistake breaker', token_budget: 'token budget' } as const;

/** A guardrail that reached a threshold (GR-1, GR-2, the token budget), as one line. */
export function formatGuardrail(update: Extract<SessionUpdate, { type: 'guardrail_triggered' }>, paint: Paint = plain): string {
  const what = {
    loop: `'${update.toolName ?? 'a tool'}' called ${update.count} times in a row with the same arguments`,
    cycle: `the same sequence of calls repeated ${update.count} times (last '${update.toolName ?? 'a tool'}')`,
    mistake_limit: `${update.count} steps in a row where every tool call failed`,
    token_budget: `token budget reached (${update.count} tokens used): one last answer without tools`,
  }[update.rule];
  return paint(update.level === 'hard' ? 'red' : 'yellow', `  ! guardrail: ${what}${update.level === 'soft' && update.rule !== 'token_budget' ? ' — a hint was given' : ''}`);
}

/** A host or client error: one line, its code first. */
export function formatError(error: ChatFailure, paint: Paint = plain): string {
  return paint('red', `error [${error.code}] ${oneLine(error.message)}`);
}

export function formatPlan(plan: Plan, paint: Paint = plain): string[] {
  const mark = { completed: paint('green', '✓'), in_progress: paint('cyan', '▶'), pending: paint('gray', '○') } as const;
  return [
    paint('bold', 'Plan') + (plan.explanation ? ` — ${oneLine(plan.explanation)}` : ''),
    ...plan.plan.map((step) => `  ${mark[step.status]} ${oneLine(step.step)}`),
  ];
}

export function formatSessions(sessions: SessionSummary[], current: string | null, paint: Paint = plain): string[] {
  if (sessions.length === 0) return ['no sessions yet'];
  return sessions.map((s) => {
    const when = new Date(s.createdAtMs).toISOString().replace('T', ' ').slice(0, 16);
    const last = s.lastOutcome ? `, last ${s.lastOutcome}` : '';
    const line = `${s.sessionId === current ? '*' : ' '} ${s.sessionId}  ${when}  ${s.agent}, ${s.permissionMode}, ${s.status}${last}`;
    return s.sessionId === current ? paint('bold', line) : line;
  });
}

/** `/agents`: each agent's name, model and description, and the tools its model is offered. */
export function formatAgents(agents: AgentSummary[], paint: Paint = plain): string[] {
  if (agents.length === 0) return ['no agents'];
  return agents.flatMap((agent) => [
    `${paint('bold', agent.name)}  ${paint('dim', agent.model)}${agent.description ? `  ${oneLine(agent.description)}` : ''}`,
    paint('dim', `  tools: ${agent.tools.join(', ') || '(none)'}`),
  ]);
}

const GLYPHS = { system: '█', conversation: '▓', tools: '▒', reserved: '░', free: '·', line: '│' } as const;

/**
 * The context window as a bar over the whole window: system, conversation and tools (the estimated
 * input), the output reserved for the answer, and a mark where automatic compaction starts.
 */
export function formatContext(usage: ContextUsage, paint: Paint = plain, width = 50): string[] {
  const window = Math.max(1, usage.window ?? Math.round(usage.autoCompactLine / 0.85), usage.autoCompactLine);
  const segments: [keyof typeof GLYPHS, number, Parameters<Paint>[0]][] = [
    ['system', usage.system, 'magenta'],
    ['conversation', usage.conversation, 'cyan'],
    ['tools', usage.tools, 'yellow'],
    ['reserved', usage.reservedOutput, 'gray'],
  ];
  const cells: string[] = [];
  let filled = 0;
  for (const [name, tokens, color] of segments) {
    if (tokens <= 0) continue;
    filled += tokens;
    // Each region at least one cell; the end of each is where its running total falls.
    const end = Math.min(width, Math.max(cells.length + 1, Math.round((filled / window) * width)));
    while (cells.length < end) cells.push(paint(color, GLYPHS[name]));
  }
  while (cells.length < width) cells.push(paint('gray', GLYPHS.free));
  const at = Math.min(width - 1, Math.round((usage.autoCompactLine / window) * width));
  cells[at] = paint('red', GLYPHS.line);
  const n = (tokens: number) => tokens.toLocaleString('en-US');
  return [
    `context ${cells.join('')} ${usage.percentUsed}% of the auto-compact line`,
    `  ${paint('magenta', GLYPHS.system)} system ${n(usage.system)}  ${paint('cyan', GLYPHS.conversation)} conversation ${n(usage.conversation)}  ` +
      `${paint('yellow', GLYPHS.tools)} tools ${n(usage.tools)}  ${paint('gray', GLYPHS.reserved)} reserved output ${n(usage.reservedOutput)}`,
    `  ${paint('red', GLYPHS.line)} auto-compact at ${n(usage.autoCompactLine)} of a ${n(window)}-token window` +
      ` (input ${n(usage.system + usage.conversation + usage.tools)})`,
  ];
}

export const HELP = [
  'Type a message and press Enter to start a turn. While it runs:',
  '  Ctrl+C          cancel the running turn (twice quickly, or again when idle: exit)',
  '  a / d           answer an approval: allow once / deny',
  'Commands:',
  '  /sessions       list sessions, newest first',
  '  /agents         list the agents a new session may run',
  '  /new [AGENT]    start a new session (of AGENT; default: --agent, else the default agent)',
  '  /open ID        continue another session',
  '  /mode MODE      permission mode: ask, auto or read_only (no argument: show it)',
  '  /compact        compact the conversation into a checkpoint',
  '  /context        the context window: system, conversation, tools against the auto-compact line',
  '  /help           this help',
  '  /exit           leave (Ctrl+D too)',
];

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ⏎ ').trim();
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
