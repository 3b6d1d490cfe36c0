import type { WorldStateSection } from './types.js';

/** How each section is named in its notices (001 §3); fixed so the scan can recognise them later. */
const TITLES: Readonly<Record<WorldStateSection, string>> = {
  'runtime/user-project-context': 'project context',
  'project/AGENTS.md': 'AGENTS.md content',
  'skills/catalog': 'skill catalog',
  'runtime/sandbox-policy': 'sandbox policy',
};

/** A new body for a section the model has already seen: tells it to drop the older one. */
export function replacementText(section: WorldStateSection, body: string): string {
  const title = TITLES[section];
  return `The following ${title} replaces all previously provided ${title}.\n${body}`;
}

/** A section the model has seen that is now gone. */
export function invalidationNotice(section: WorldStateSection): string {
  return `The previously provided ${TITLES[section]} no longer applies.`;
}
