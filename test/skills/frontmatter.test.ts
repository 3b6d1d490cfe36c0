import { describe, expect, it } from 'vitest';
import { parseSkillFile } from '../../src/skills/frontmatter.js';

describe('parseSkillFile', () => {
  it('reads the description and returns the text after the block as the body', () => {
    expect(parseSkillFile('---\nname: review\ndescription: Review a diff\n---\nStep 1.\nStep 2.\n')).toEqual({
      description: 'Review a diff',
      body: 'Step 1.\nStep 2.\n',
    });
  });

  it('strips matching quotes and tolerates CRLF line ends', () => {
    expect(parseSkillFile('---\r\ndescription: "Quoted: yes"\r\n---\r\nBody')).toEqual({ description: 'Quoted: yes', body: 'Body' });
  });

  it('treats a file without frontmatter as all body, with an empty description', () => {
    expect(parseSkillFile('Just do it.\n---\n')).toEqual({ description: '', body: 'Just do it.\n---\n' });
  });

  it('has an empty description when the block has none', () => {
    expect(parseSkillFile('---\nname: x\n---\nBody')).toEqual({ description: '', body: 'Body' });
  });

  it('throws on an unclosed block or a line that is not key: value', () => {
    expect(() => parseSkillFile('---\ndescription: x\nBody')).toThrow(/not closed/);
    expect(() => parseSkillFile('---\njust words\n---\nBody')).toThrow(/key: value/);
  });
});
