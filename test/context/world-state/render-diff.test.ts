import { describe, expect, it } from 'vitest';
import { nextBaseline, renderWorldStateDiff } from '../../../src/context/world-state/render-diff.js';
import type { WorldStateSection } from '../../../src/context/world-state/types.js';

const S: WorldStateSection = 'project/AGENTS.md';
const REPLACES = 'The following AGENTS.md content replaces all previously provided AGENTS.md content.\n';
const INVALID = 'The previously provided AGENTS.md content no longer applies.';

/** One section's outcome: capture `now` (null = absent), baseline `sent` (undefined = none), retained or not. */
function diff(now: string | null, sent: string | undefined, retained: boolean) {
  const baseline = new Map<WorldStateSection, string>(sent === undefined ? [] : [[S, sent]]);
  return renderWorldStateDiff(new Map([[S, now]]), baseline, new Set(retained ? [S] : []));
}

describe('renderWorldStateDiff (001 §3 table)', () => {
  it('baseline has it, same body, retained → nothing', () => {
    expect(diff('A', 'A', true)).toEqual([]);
  });

  it('baseline has it, different body, retained → replacement notice + body', () => {
    expect(diff('B', 'A', true)).toEqual([{ section: S, text: `${REPLACES}B` }]);
  });

  it('baseline has it, now absent, retained → invalidation notice', () => {
    expect(diff(null, 'A', true)).toEqual([{ section: S, text: INVALID }]);
  });

  it('baseline has it, compacted away → body without notice (same or different body); absent → nothing', () => {
    expect(diff('A', 'A', false)).toEqual([{ section: S, text: 'A' }]);
    expect(diff('B', 'A', false)).toEqual([{ section: S, text: 'B' }]);
    expect(diff(null, 'A', false)).toEqual([]);
  });

  it('no baseline (restart), retained → replacement notice + body, even for the same text; absent → invalidation', () => {
    expect(diff('A', undefined, true)).toEqual([{ section: S, text: `${REPLACES}A` }]);
    expect(diff(null, undefined, true)).toEqual([{ section: S, text: INVALID }]);
  });

  it('no baseline, not retained → body without notice; absent → nothing', () => {
    expect(diff('A', undefined, false)).toEqual([{ section: S, text: 'A' }]);
    expect(diff(null, undefined, false)).toEqual([]);
  });

  it('uses each section its own title', () => {
    const capture = new Map<WorldStateSection, string | null>([
      ['runtime/user-project-context', 'p'],
      ['project/AGENTS.md', 'a'],
      ['skills/catalog', null],
      ['runtime/sandbox-policy', 's'],
    ]);
    const all = new Set<WorldStateSection>(capture.keys());
    expect(renderWorldStateDiff(capture, new Map(), all).map((m) => m.text)).toEqual([
      'The following project context replaces all previously provided project context.\np',
      `${REPLACES}a`,
      'The previously provided skill catalog no longer applies.',
      'The following sandbox policy replaces all previously provided sandbox policy.\ns',
    ]);
  });
});

describe('a sampling sequence', () => {
  const first = new Map<WorldStateSection, string | null>([
    // Inserted out of order on purpose: the output order comes from SECTION_ORDER, not the map.
    ['runtime/sandbox-policy', 'policy'],
    ['skills/catalog', null],
    ['project/AGENTS.md', 'agents'],
    ['runtime/user-project-context', 'project'],
  ]);

  it('the first sampling emits every present section in SECTION_ORDER, deterministically', () => {
    const expected = [
      { section: 'runtime/user-project-context', text: 'project' },
      { section: 'project/AGENTS.md', text: 'agents' },
      { section: 'runtime/sandbox-policy', text: 'policy' },
    ];
    expect(renderWorldStateDiff(first, new Map(), new Set())).toEqual(expected);
    expect(renderWorldStateDiff(first, new Map(), new Set())).toEqual(expected);
  });

  it('an unchanged world emits nothing after the baseline advances', () => {
    const baseline = nextBaseline(first);
    expect([...baseline.entries()]).toEqual([
      ['runtime/user-project-context', 'project'],
      ['project/AGENTS.md', 'agents'],
      ['runtime/sandbox-policy', 'policy'],
    ]);
    const retained = new Set<WorldStateSection>(baseline.keys());
    expect(renderWorldStateDiff(first, baseline, retained)).toEqual([]);
  });

  it('only the changed section is sent when one body changes', () => {
    const baseline = nextBaseline(first);
    const changed = new Map(first).set('project/AGENTS.md', 'agents v2');
    expect(renderWorldStateDiff(changed, baseline, new Set(baseline.keys()))).toEqual([{ section: S, text: `${REPLACES}agents v2` }]);
  });
});
