import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/requirements.md explains the requirement ids the code cites (RT-10, CW-2, …). This keeps it
 * from rotting: every id cited in the code has an entry, and every path the page names exists.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = 'docs/requirements.md';
/** The folders whose comments cite requirement ids. */
const CITING_DIRS = ['src', 'machines', 'storage'];
const CITE = /\b(RT|CW|CP|GR|RL|LC|XS)-\d+\b/g;
/** An entry: a list item whose first thing is the id in bold, e.g. `- **RT-10** …` (GR-2a has a letter). */
const ENTRY = /^- \*\*((?:RT|CW|CP|GR|RL|LC|XS)-\d+[a-z]?)\*\*/;
/** A backticked repository path: under one of the repository's folders, or the README. */
const REPO_PATH = /^(?:(?:machines|src|storage|test|docs|examples|bench|visualizer)\/[\w./-]*|README\.md)$/;

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : tsFiles(path);
    return entry.isFile() && entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every cited id, with the `file:line`s citing it. */
function citedIds(dirs: readonly string[] = CITING_DIRS, root = ROOT): Map<string, string[]> {
  const cited = new Map<string, string[]>();
  for (const file of dirs.flatMap((dir) => tsFiles(dir))) {
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const [id] of line.matchAll(CITE)) {
          const where = `${file}:${index + 1}`;
          const at = cited.get(id);
          if (at) at.push(where);
          else cited.set(id, [where]);
        }
      });
  }
  return cited;
}

interface Entry {
  id: string;
  line: number;
  text: string;
}

/** The page's entries: each runs from its `- **ID**` line to the next list item or heading. */
function entriesOf(doc: string): Entry[] {
  const entries: Entry[] = [];
  let current: Entry | null = null;
  doc.split('\n').forEach((line, index) => {
    const match = ENTRY.exec(line);
    if (match) {
      current = { id: match[1]!, line: index + 1, text: line };
      entries.push(current);
    } else if (current && (line.startsWith('- ') || line.startsWith('#') || line.trim() === '')) {
      current = null;
    } else if (current) {
      current.text += `\n${line}`;
    }
  });
  return entries;
}

/** The backticked repository paths in a piece of the page. */
function pathsIn(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map(([, token]) => token!).filter((token) => REPO_PATH.test(token));
}

/** What is wrong between the cited ids and the page's entries: missing ids, each with the files citing it. */
function missingEntries(cited: Map<string, string[]>, entries: readonly Entry[]): string[] {
  const defined = new Set(entries.map((e) => e.id));
  return [...cited]
    .filter(([id]) => !defined.has(id))
    .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
    .map(([id, at]) => `${id} — cited at ${at.join(', ')}`);
}

describe(`${DOC}`, () => {
  const doc = readFileSync(join(ROOT, DOC), 'utf8');
  const entries = entriesOf(doc);

  it('has an entry for every requirement id cited in src/, machines/ and storage/', () => {
    const cited = citedIds();
    expect(cited.size).toBeGreaterThan(0);
    const missing = missingEntries(cited, entries);
    expect(missing, `ids cited in the code but not defined in ${DOC} (add a "- **ID** …" entry):\n${missing.join('\n')}`).toEqual([]);
  });

  it('defines each id once, and names the code of each', () => {
    const seen = new Map<string, number>();
    const duplicates: string[] = [];
    for (const { id, line } of entries) {
      const first = seen.get(id);
      if (first !== undefined) duplicates.push(`${id} at lines ${first} and ${line}`);
      else seen.set(id, line);
    }
    expect(duplicates, `ids defined twice in ${DOC}`).toEqual([]);
    const withoutCode = entries.filter((e) => pathsIn(e.text).length === 0).map((e) => `${e.id} (line ${e.line})`);
    expect(withoutCode, `entries of ${DOC} that name no file`).toEqual([]);
  });

  it('names only paths that exist', () => {
    const paths = [...new Set(pathsIn(doc))];
    expect(paths.length).toBeGreaterThan(0);
    const absent = paths.filter((path) => !existsSync(join(ROOT, path)));
    expect(absent, `paths named in ${DOC} that do not exist in the repository`).toEqual([]);
  });

  it('names a missing id with the files citing it', () => {
    const cited = new Map([['RT-999', ['src/example.ts:3']]]);
    expect(missingEntries(cited, entries)).toEqual(['RT-999 — cited at src/example.ts:3']);
  });
});
