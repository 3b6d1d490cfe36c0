/** A SKILL.md split into its optional frontmatter fields and its body. */
export interface ParsedSkillFile {
  description: string;
  body: string;
}

/**
 * Reads the `---` block at the very top of a SKILL.md. Only flat `key: value` lines are understood,
 * which is all a skill needs; anything richer is the skill author's to keep out of the header.
 * Throws when a block is opened but never closed, or holds a line that is not `key: value`.
 */
export function parseSkillFile(text: string): ParsedSkillFile {
  const lines = text.split('\n');
  if (lines[0]?.replace(/\r$/, '') !== '---') return { description: '', body: text };
  const close = lines.findIndex((line, i) => i > 0 && line.replace(/\r$/, '') === '---');
  if (close < 0) throw new Error('frontmatter is not closed by a `---` line');

  const fields = new Map<string, string>();
  for (const raw of lines.slice(1, close)) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const match = /^([A-Za-z0-9_-]+):(.*)$/.exec(line);
    if (!match) throw new Error(`frontmatter line is not \`key: value\`: ${JSON.stringify(line)}`);
    fields.set(match[1] as string, unquote((match[2] as string).trim()));
  }
  return { description: fields.get('description') ?? '', body: lines.slice(close + 1).join('\n') };
}

function unquote(value: string): string {
  const quoted = value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0];
  return quoted ? value.slice(1, -1) : value;
}
