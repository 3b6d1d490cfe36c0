import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Writes `<dir>/<name>/SKILL.md`. */
export async function writeSkill(dir: string, name: string, text: string | Buffer): Promise<string> {
  await mkdir(path.join(dir, name), { recursive: true });
  const file = path.join(dir, name, 'SKILL.md');
  await writeFile(file, text);
  return file;
}

/** Makes `<dir>/<name>/SKILL.md` a symbolic link to `target`. */
export async function linkSkillFile(dir: string, name: string, target: string): Promise<string> {
  await mkdir(path.join(dir, name), { recursive: true });
  const file = path.join(dir, name, 'SKILL.md');
  await symlink(target, file);
  return file;
}
