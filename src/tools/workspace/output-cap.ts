/** The note that ends cut output: it says how much was cut, so the model knows the answer is partial. */
export function truncationNote(shown: number, total: number, unit = 'characters', hint = ''): string {
  return `\n[output truncated: ${total - shown} of ${total} ${unit} not shown${hint ? `; ${hint}` : ''}]`;
}

/** `text` cut to `max` characters (a cut never splits a surrogate pair), with the note when cut. */
export function capOutput(text: string, max: number, hint = ''): string {
  if (text.length <= max) return text;
  const shown = cutIndex(text, max);
  return text.slice(0, shown) + truncationNote(shown, text.length, 'characters', hint);
}

/** One line shortened to `max` characters, marked so a cut line is not mistaken for a whole one. */
export function capLine(line: string, max: number): string {
  return line.length <= max ? line : `${line.slice(0, cutIndex(line, max))} … [line cut at ${max} of ${line.length} characters]`;
}

function cutIndex(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}
