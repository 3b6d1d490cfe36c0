import type { WorldStateSection } from '../../protocol/messages.js';
import type { SkillsConfig } from '../../skills/types.js';
import type { PermissionMode } from '../../protocol/commands.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';

export type { WorldStateSection };

/** CW-2: the order sections are captured, compared and appended in. */
export const SECTION_ORDER: readonly WorldStateSection[] = [
  'runtime/user-project-context',
  'project/AGENTS.md',
  'skills/catalog',
  'runtime/sandbox-policy',
];

/** Where a session's world state comes from. */
export interface WorldStateSources {
  /** The session's workspace; null → no project context and no AGENTS.md section. */
  workspaceDir: string | null;
  /**
   * The workspace is a user's own directory beneath a shared one: the project context looks for no
   * repository above it, so the host's own files are not named to the user's model.
   */
  ownDirectory?: boolean;
  /** The runtime's skills directory; null → no catalog section. */
  skills: SkillsConfig | null;
  permissionMode: PermissionMode;
  /** The sandbox the session's commands run in; absent or null: no tool of the session reports one. */
  sandbox?: SessionSandbox | null;
}

/** The rendered body of every section right now; `null` = the section is absent. */
export type WorldStateCapture = ReadonlyMap<WorldStateSection, string | null>;

/** What was last sent per section (memory only, empty after a restart). */
export type WorldStateBaseline = ReadonlyMap<WorldStateSection, string>;

/** One message to append: the section and the full text (notice + body, or the invalidation notice). */
export interface WorldStateMessage {
  section: WorldStateSection;
  text: string;
}
