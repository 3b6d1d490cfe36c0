/**
 * Text that storage gives back as it was given: PostgreSQL refuses NUL in text, and a lone UTF-16
 * surrogate has no UTF-8 form — PostgreSQL stores U+FFFD (so two different ids become one, and the
 * second turn fails on the unique request id), SQLite reads it back as three U+FFFD (so a request
 * id no longer matches itself after a restart).
 */
export const storable = (value: string): boolean => !value.includes('\0') && !/\p{Cs}/u.test(value);
export const STORABLE = 'must not contain NUL or a lone UTF-16 surrogate';
