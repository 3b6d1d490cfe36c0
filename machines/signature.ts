export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableStringify((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Tool arguments nested deeper than this are refused: the checks after parsing recurse over them. */
export const MAX_ARGUMENT_DEPTH = 64;

/** Parses model-produced argument text; `undefined` when it is not a JSON object of bounded depth. */
export function parseArguments(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text === '' ? '{}' : text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || depthOf(value) > MAX_ARGUMENT_DEPTH) return undefined;
  return value as Record<string, unknown>;
}

/** Nesting depth of parsed JSON, measured without recursion so no input can overflow the stack. */
function depthOf(root: object): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[root, 1]];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const [value, depth] = entry;
    if (value === null || typeof value !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_ARGUMENT_DEPTH) return deepest;
    for (const child of Object.values(value as Record<string, unknown>)) stack.push([child, depth + 1]);
  }
  return deepest;
}
