/**
 * A file-name glob as a RegExp: `*` any run of characters, `?` one character, `{a,b}` either
 * alternative (not nested); everything else literal, including a `{` that is never closed. It
 * matches the name only, never a directory path, so `*.ts` finds TypeScript files at every depth.
 */
export function globToRegExp(glob: string): RegExp {
  const chars = [...glob];
  let source = '';
  let inBraces = false;
  chars.forEach((char, i) => {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '{' && !inBraces && chars.indexOf('}', i) !== -1) [source, inBraces] = [source + '(?:', true];
    else if (char === '}' && inBraces) [source, inBraces] = [source + ')', false];
    else if (char === ',' && inBraces) source += '|';
    else source += char.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
  });
  return new RegExp(`^${source}$`, 'su');
}
