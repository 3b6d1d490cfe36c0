import type { ModelPort, ModelRequest, RequestMessage } from '../protocol/model.js';
import { DEFAULT_CAPABILITIES, replay, type ScriptedReply } from './scripted-model.js';

/**
 * The model a host runs with when none is configured: a small scripted agent that never runs out.
 * It decides from the request alone — a user asking to write or note something gets a
 * `write_file` call (which asks for approval in the `ask` mode), any other request a `list_dir` of
 * the workspace; a tool result is answered with a summary. Enough to see a whole turn, an approval
 * and the live stream without a provider; real providers plug in with `--model`.
 */
export function demoModel(): ModelPort {
  return {
    capabilities: DEFAULT_CAPABILITIES,
    identity: { provider: 'turnchart', model: 'demo' },
    async *stream(request: ModelRequest) {
      yield* replay(decide(request));
    },
  };
}

const DEMO_NOTE_PATH = 'turnchart-note.md';

function decide(request: ModelRequest): ScriptedReply {
  // World state sampled after a tool ran may follow its result: what matters is what came before it.
  const last = request.messages.findLast((m) => m.role !== 'user' || !isWorldState(m.text));
  if (last?.role === 'tool') return answer(last);
  const said = lastUserText(request.messages);
  if (/\b(write|note|save)\b/i.test(said)) {
    return {
      text: `I will write that down in ${DEMO_NOTE_PATH}.`,
      toolCalls: [{ name: 'write_file', args: { path: DEMO_NOTE_PATH, content: `# Note\n\n${said}\n` } }],
    };
  }
  return { text: 'Let me look at the workspace first.', toolCalls: [{ name: 'list_dir', args: { path: '.' } }] };
}

function answer(result: Extract<RequestMessage, { role: 'tool' }>): ScriptedReply {
  if (result.status !== 'success') return { text: `The ${result.toolName} call did not go through (${result.status}): ${firstLine(result.content)}` };
  if (result.toolName === 'list_dir') return { text: listingSummary(result.content) };
  return { text: `Done: ${firstLine(result.content)}` };
}

/** `list_dir`'s answer in a sentence: its entries, the first five named (an empty directory's answer is a note, not an entry). */
function listingSummary(content: string): string {
  const entries = content.split('\n').filter((line) => line.trim() !== '');
  if (entries.length === 0 || (entries.length === 1 && /^\(.* is empty\)$/.test(entries[0]!))) return 'The workspace is empty.';
  if (entries.length === 1) return `The workspace has one entry: ${entries[0]}.`;
  const named = entries.slice(0, 5).join(', ');
  return entries.length <= 5 ? `The workspace has ${entries.length} entries: ${named}.` : `The workspace has ${entries.length} entries, among them ${named}.`;
}

/** The user's own words: world-state and skill messages are tagged and are not what the user said. */
function lastUserText(messages: RequestMessage[]): string {
  const said = messages.findLast((m) => m.role === 'user' && !isWorldState(m.text));
  return said?.role === 'user' ? said.text : '';
}

/** A world-state or skill message: a tagged block, possibly after a one-line replacement notice. */
function isWorldState(text: string): boolean {
  return /^([^\n<]*\n)?</.test(text);
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').slice(0, 200);
}
