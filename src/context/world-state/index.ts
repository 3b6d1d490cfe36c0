export { capturePolicyOnly, captureWorldState } from './capture.js';
export { invalidationNotice, replacementText } from './notices.js';
export { nextBaseline, renderWorldStateDiff } from './render-diff.js';
export { scanRetainedSections } from './retained-sections.js';
export { renderSandboxPolicy } from './sandbox-policy.js';
export {
  type WorldStateBaseline,
  type WorldStateCapture,
  type WorldStateSources,
} from './types.js';
