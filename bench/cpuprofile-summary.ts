/**
 * Summarizes a V8 `.cpuprofile`: self time by function and by file, and inclusive time by file
 * (a file counted once per sample however often it appears on the stack).
 *
 *   npx tsx bench/cpuprofile-summary.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: cpuprofile-summary <file.cpuprofile> [top]');
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function shortUrl(url: string): string {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const main = url.indexOf('/work/main/');
  return main >= 0 ? url.slice(main + '/work/main/'.length) : url.replace(/^file:\/\//, '');
}

const PROJECT = /^(src|machines|storage)\//;
/** Library or area a frame belongs to: the package name, the project folder, or node/native. */
function area(url: string): string {
  const short = shortUrl(url);
  if (short.startsWith('node:')) return 'node internals';
  if (short === '(native)') return '(native/gc/idle)';
  const m = /^(@[^/]+\/[^/]+|[^/]+)\//.exec(short);
  return m ? m[1]! : short;
}

const selfByFn = new Map<string, number>();
const selfByArea = new Map<string, number>();
const byProjectFrame = new Map<string, number>();
const selfByFile = new Map<string, number>();
const inclByFile = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const node = byId.get(id)!;
  const f = node.callFrame;
  const fileKey = shortUrl(f.url);
  const fnKey = `${f.functionName || '(anonymous)'}  ${fileKey}:${f.lineNumber + 1}`;
  selfByFn.set(fnKey, (selfByFn.get(fnKey) ?? 0) + dt);
  selfByFile.set(fileKey, (selfByFile.get(fileKey) ?? 0) + dt);
  selfByArea.set(area(f.url), (selfByArea.get(area(f.url)) ?? 0) + dt);
  // Charge the sample to the innermost project function on the stack: which of our functions causes the work.
  let owner = '(no project frame)';
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const cf = byId.get(cur)!.callFrame;
    const short = shortUrl(cf.url);
    if (PROJECT.test(short)) {
      owner = `${cf.functionName || '(anonymous)'}  ${short}:${cf.lineNumber + 1}`;
      break;
    }
  }
  byProjectFrame.set(owner, (byProjectFrame.get(owner) ?? 0) + dt);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const key = shortUrl(byId.get(cur)!.callFrame.url);
    if (!seen.has(key)) {
      seen.add(key);
      inclByFile.set(key, (inclByFile.get(key) ?? 0) + dt);
    }
  }
});

function print(title: string, map: Map<string, number>): void {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`);
  }
}

console.log(`total ${(total / 1000).toFixed(0)} ms in ${profile.samples.length} samples`);
print('self time by function', selfByFn);
print('self time by file', selfByFile);
print('self time by area', selfByArea);
print('charged to the innermost project frame (src/, machines/, storage/)', byProjectFrame);
print('inclusive time by file', inclByFile);
