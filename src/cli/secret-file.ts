import { readFileSync } from 'node:fs';
import { messageOf } from '../protocol/error-message.js';

/**
 * A secret kept in a file (`--token-file`, a mounted Docker or Kubernetes secret): its text
 * without the line ending that `echo` or an editor puts after it. `label` names the flag in the
 * error; a file that cannot be read or holds nothing is one.
 */
export function readSecretFile(path: string, label: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`${label}: cannot read ${path}: ${messageOf(error)}`);
  }
  const secret = text.replace(/[\r\n]+$/, '');
  if (secret === '') throw new Error(`${label}: ${path} is empty`);
  return secret;
}
