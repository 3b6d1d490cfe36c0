/**
 * CW-8: author-controlled items over their limit are refused, never trimmed. Tool results are not
 * here: an oversized one is projected down instead (`projection.ts`).
 */

/** A system context part must estimate under this: otherwise the request cannot be assembled. */
export const SYSTEM_PART_TOKEN_LIMIT = 10_000;

/** A selected skill's body must estimate under this: otherwise the turn is not accepted. */
export const SKILL_TOKEN_LIMIT = 8_000;

/** A delivered agent message must estimate under this: otherwise the delivery is refused. */
export const AGENT_MESSAGE_TOKEN_LIMIT = 4_000;
