import bundleEntries from './bundles.js';
import { chooseSeeds } from './reliability-seeds.js';
import { resetTally, summarizeTally } from './reliability-tally.js';

/**
 * Vitest global setup of `npm run test:reliability`: fixes the seeds, bundles the crash host (and the other test programs), and at
 * the end prints what the run did (kills, schedules, fault cases), summed over its files.
 */
export default async function setup(): Promise<() => void> {
  chooseSeeds();
  resetTally();
  await bundleEntries();
  return () => {
    console.log(['reliability totals:', ...summarizeTally().map((line) => `  ${line}`)].join('\n'));
  };
}
