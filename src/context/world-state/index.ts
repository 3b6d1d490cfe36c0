export { capturePolicyOnly, captureWorldState } from './capture.js';
export { invalidationNotice, replacementText } from './notices.js';
export { captureProjectInstructions, MAX_PROJECT_INSTRUCTIONS_BYTES } from './project-instructions.js';
export { nextBaseline, renderWorldStateDiff } from './render-diff.js';
export { scanRetainedSections } from './retained-sections.js';
export { renderSandboxPolicy } from './sandbox-policy.js';
export { captureSkillCatalog } from './skill-catalog.js';
export {
  SECTION_ORDER,
  WorldStateError,
  type WorldStateBaseline,
  type WorldStateCapture,
  type WorldStateErrorCode,
  type WorldStateMessage,
  type WorldStateSection,
  type WorldStateSources,
} from './types.js';
export { captureUserProjectContext, MAX_PROJECT_CONTEXT_CHARS, MAX_TOP_LEVEL_ENTRIES } from './user-project.js';
