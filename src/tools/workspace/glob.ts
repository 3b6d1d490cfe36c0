/**
 * A file-name glob: `*` any run of characters, `?` one character, `{a,b}` either alternative (not
 * nested); everything else literal, including a `{` that is never closed. It matches the name
 * only, never a directory path, so `*.ts` finds TypeScript files at every depth.
 *
 * The glob comes from the model, so it is matched by simulating its automaton over the name's
 * characters, never by a backtracking regular expression: `*a*a*a*a*a*a*b` translated to
 * `^.*a.*a…b$` held the host's thread for minutes on one long name. Here a name costs at most
 * (its length × the glob's length) steps, whatever the glob.
 */
export class NameGlob {
  private readonly nodes: GlobNode[] = [{ on: 'accept' }];
  private readonly start: number;
  /** Scratch for one match: which nodes the current step has already reached. */
  private readonly seen: Uint32Array;
  private generation = 0;

  constructor(glob: string) {
    this.start = this.build(parse(glob), 0);
    this.seen = new Uint32Array(this.nodes.length);
  }

  matches(name: string): boolean {
    let current = this.reach([this.start]);
    for (const char of name) {
      const targets: number[] = [];
      for (const index of current) {
        const node = this.nodes[index]!;
        if (node.on === 'star') targets.push(index);
        else if (node.on === 'any' || (node.on === 'char' && node.char === char)) targets.push(node.to);
      }
      if (targets.length === 0) return false;
      current = this.reach(targets);
    }
    return current.includes(0);
  }

  /** The nodes that `from` reach without consuming a character, each once. */
  private reach(from: number[]): number[] {
    const generation = ++this.generation;
    const out: number[] = [];
    const stack = [...from];
    while (stack.length > 0) {
      const index = stack.pop()!;
      if (this.seen[index] === generation) continue;
      this.seen[index] = generation;
      const node = this.nodes[index]!;
      if (node.on === 'split') stack.push(...node.to);
      else {
        out.push(index);
        if (node.on === 'star') stack.push(node.to);
      }
    }
    return out;
  }

  /** Adds the nodes for `items` in front of `next` (built back to front); answers the first one. */
  private build(items: GlobItem[], next: number): number {
    let entry = next;
    for (let i = items.length - 1; i >= 0; i -= 1) {
      const item = items[i]!;
      const node: GlobNode =
        item.kind === 'group'
          ? { on: 'split', to: item.alternatives.map((alternative) => this.build(alternative, entry)) }
          : item.kind === 'char'
            ? { on: 'char', char: item.char, to: entry }
            : { on: item.kind, to: entry };
      entry = this.nodes.push(node) - 1;
    }
    return entry;
  }
}

type GlobItem = { kind: 'char'; char: string } | { kind: 'any' } | { kind: 'star' } | { kind: 'group'; alternatives: GlobItem[][] };

/** `star` consumes any character and stays, or moves on to `to` without consuming one. */
type GlobNode =
  | { on: 'accept' }
  | { on: 'char'; char: string; to: number }
  | { on: 'any'; to: number }
  | { on: 'star'; to: number }
  | { on: 'split'; to: number[] };

function parse(glob: string): GlobItem[] {
  const chars = [...glob];
  const items: GlobItem[] = [];
  let group: GlobItem[][] | null = null;
  const add = (item: GlobItem) => (group ? group.at(-1)!.push(item) : items.push(item));
  chars.forEach((char, i) => {
    if (char === '*') add({ kind: 'star' });
    else if (char === '?') add({ kind: 'any' });
    else if (char === '{' && !group && chars.indexOf('}', i) !== -1) group = [[]];
    else if (char === '}' && group) {
      items.push({ kind: 'group', alternatives: group });
      group = null;
    } else if (char === ',' && group) group.push([]);
    else add({ kind: 'char', char });
  });
  return items;
}
