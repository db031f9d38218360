import { describe, expect, it } from 'vitest';
import { boundedWordDiff } from '../../src/web/word-diff.ts';

// The diff pages show each version in its own column: the old one from the unchanged and removed parts,
// the new one from the unchanged and added parts. Each column must read exactly as that version was saved.
describe('the word differ of the diff pages', () => {
  const sides = (before: string, after: string) => {
    const parts = boundedWordDiff()(before, after);
    return {
      old: parts
        .filter((part) => !part.added)
        .map((part) => part.value)
        .join(''),
      new: parts
        .filter((part) => !part.removed)
        .map((part) => part.value)
        .join(''),
      parts,
    };
  };

  it.each([
    ['Friendly and confident', 'Friendly, warm and confident'],
    ['Prefer short sentences.', 'Prefer short, clear sentences.'],
    ['formal tone', 'formal, tone'],
    ['two  spaces\n and a line', 'two spaces\nand a line, longer'],
    ['', 'all new'],
    ['all gone', ''],
  ])('spells both versions exactly: %j → %j', (before, after) => {
    const { old, new: updated, parts } = sides(before, after);
    expect(old).toBe(before);
    expect(updated).toBe(after);
    expect(parts.some((part) => part.added || part.removed)).toBe(true);
  });

  it('marks only the words that changed', () => {
    const { parts } = sides('Friendly and confident', 'Friendly, warm and confident');
    expect(parts.filter((part) => part.added).map((part) => part.value.trim())).toEqual([',', 'warm']);
    expect(parts.some((part) => part.removed)).toBe(false);
  });
});
