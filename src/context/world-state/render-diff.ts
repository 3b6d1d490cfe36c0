import { invalidationNotice, replacementText } from './notices.js';
import { SECTION_ORDER, type WorldStateBaseline, type WorldStateCapture, type WorldStateMessage, type WorldStateSection } from './types.js';

/**
 * The messages one sampling appends (001 §3). A notice is needed only when the model may still see
 * an older version: the section is retained in the conversation and the baseline does not prove
 * it is the same body (the baseline is empty after a restart). Pure: reads nothing, writes nothing.
 */
export function renderWorldStateDiff(
  capture: WorldStateCapture,
  baseline: WorldStateBaseline,
  retained: ReadonlySet<WorldStateSection>,
): WorldStateMessage[] {
  const messages: WorldStateMessage[] = [];
  for (const section of SECTION_ORDER) {
    const body = capture.get(section) ?? null;
    const text = retained.has(section) ? retainedText(section, body, baseline.get(section)) : body;
    if (text !== null) messages.push({ section, text });
  }
  return messages;
}

/** What to send for a section whose last message is still in the conversation; null → nothing. */
function retainedText(section: WorldStateSection, body: string | null, sent: string | undefined): string | null {
  if (body === null) return invalidationNotice(section);
  if (body === sent) return null;
  return replacementText(section, body);
}

/** The baseline after every message of a sampling is written: the bodies now present. */
export function nextBaseline(capture: WorldStateCapture): Map<WorldStateSection, string> {
  const baseline = new Map<WorldStateSection, string>();
  for (const section of SECTION_ORDER) {
    const body = capture.get(section);
    if (body != null) baseline.set(section, body);
  }
  return baseline;
}
