/** Skills: directories of instructions a user can pick for a turn or the model can discover (RT-1, CW-2). */

export interface SkillsConfig {
  /** A directory holding one folder per skill, each with a `SKILL.md`. */
  dir: string;
  /** Skill names that are neither listed nor selectable. */
  disabled?: string[];
}

export interface SkillSummary {
  name: string;
  description: string;
  /** Absolute path of the skill's SKILL.md. */
  path: string;
}

/** A skill body as read at acceptance time: the snapshot a turn keeps even if the file changes. */
export interface SkillSnapshot {
  name: string;
  path: string;
  body: string;
}

export type SkillResolution =
  | { ok: true; skill: SkillSnapshot }
  | { ok: false; error: { code: 'UnknownSkill'; name: string } | { code: 'SkillTooLarge'; name: string; tokens: number } };
