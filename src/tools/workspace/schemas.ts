import { z } from 'zod';

/** Long enough for any real path (PATH_MAX is 4096), short enough to keep junk out. */
const MAX_PATH_CHARS = 4_096;

/**
 * A path relative to the workspace root (or absolute inside it). NUL bytes pass the schema on
 * purpose: the `authorize` hook refuses them, so the model gets a rule denial that says why.
 */
export const pathField = z.string().min(1, 'the path is empty').max(MAX_PATH_CHARS);
