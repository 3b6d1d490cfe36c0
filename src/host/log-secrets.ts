/**
 * Issue 27: no secret reaches a log line. The host's secrets are known (its token, JWT secret, API
 * key, database and broker URLs); a message built from a driver's or a library's error could still
 * carry one, so every line is scrubbed as it is written, whatever the code that wrote it. pino's
 * `redact` covers fields by name; this covers the values, wherever they sit.
 */

/** A secret shorter than this is not looked for: it would mangle ordinary words ("test", "guest") in every line. */
const MIN_SECRET_LENGTH = 8;

/** The password of any URL with credentials: `amqp://user:pass@host` → `amqp://user:***@host`. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@"]+):[^\s@"]*@/gi;

const MASK = '***';

/** A function that masks the given secrets (and every URL's password) in a line of text. */
export function secretScrubber(secrets: readonly (string | null | undefined)[]): (line: string) => string {
  const values = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret === '') continue;
    for (const value of [secret, ...passwordsIn(secret)]) {
      if (value.length < MIN_SECRET_LENGTH) continue;
      values.add(value);
      // As a JSON line holds it: a quote or a backslash in it is escaped there.
      values.add(JSON.stringify(value).slice(1, -1));
    }
  }
  // Longest first: a URL is masked whole before the password inside it is looked for.
  const ordered = [...values].sort((a, b) => b.length - a.length);
  return (line) => {
    let scrubbed = line.replace(URL_PASSWORD, `$1:${MASK}@`);
    for (const value of ordered) if (scrubbed.includes(value)) scrubbed = scrubbed.split(value).join(MASK);
    return scrubbed;
  };
}

/** A URL secret's password, as written and decoded; nothing for a secret that is not a URL. */
function passwordsIn(secret: string): string[] {
  if (!secret.includes('://')) return [];
  try {
    const { password } = new URL(secret);
    return password === '' ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}
