/**
 * Bounds on what a skills directory can put in front of the model. A skill's author is not the
 * operator, so every file is held to `AGENTS.md`'s rules (regular file, no link, bounded, UTF-8).
 */

/** A SKILL.md over this is refused unread. A body must estimate under 8 000 tokens (≈ 32 KB) anyway. */
export const MAX_SKILL_FILE_BYTES = 64 * 1024;

/** A description over this makes the skill invalid: it would be repeated in the catalog on every model call. */
export const MAX_SKILL_DESCRIPTION_CHARS = 1_024;

/** A backstop only: files are opened non-blocking, so a read of a regular file should never take this long. */
export const SKILL_READ_TIMEOUT_MS = 2_000;
