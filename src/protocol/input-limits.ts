/**
 * Upper bounds on what a host or a model can hand the runtime in bulk (issue 9, defect 7). Each is
 * refused with a typed error rather than accepted until something downstream overflows.
 */

/** Agent messages waiting in one session's mailbox (RT-4). */
export const MAILBOX_MAX_MESSAGES = 64;

/** Their estimated tokens together: more would not fit the next model call anyway. */
export const MAILBOX_MAX_TOKENS = 32_000;

/** A tool call id, a tool name and a call's arguments text as a model sends them. */
export const MODEL_TOOL_CALL_ID_MAX_CHARS = 256;
export const MODEL_TOOL_NAME_MAX_CHARS = 256;
export const MODEL_TOOL_ARGUMENTS_MAX_CHARS = 1_000_000;

/** Tool calls in one model response. */
export const MODEL_TOOL_CALLS_MAX = 128;
