// Word differences for the voice and glossary diff pages, bounded in time. jsdiff's algorithm costs time in
// the product of the texts' length and the number of edits between them: two unrelated versions of a long
// text (30 kB of guidelines, a glossary of long translations) took seconds of the one event loop, during
// which the instance answered nothing else. A page gets a budget; a change that does not fit it is shown
// whole (the old text removed, the new one added), which says what changed without where in the text.
// Whitespace runs are tokens of their own (`diffWordsWithSpace`): each column of a page shows one side of
// the diff, so the unchanged and removed parts must spell the old text exactly, and the unchanged and added
// parts the new one. Plain `diffWords` ignores whitespace and hands a shared space to an insertion, so the
// old column of "Friendly and" → "Friendly, warm and" read "Friendlyand".
import type { ChangeObject } from 'diff';
import { onFirstUse } from '../lib/on-first-use.ts';

const diff = onFirstUse<typeof import('diff')>('diff');

/** The main-thread time one page may spend on its diffs, and one diff at most. */
const PAGE_BUDGET_MS = 250;
const ONE_DIFF_MS = 50;
/**
 * Past this many word edits two texts have little left in common, and a word-by-word rendering of them
 * says no more than the whole texts do; it also bounds the work whatever the machine's speed.
 */
const MAX_WORD_EDITS = 2000;

export type DiffPart = Pick<ChangeObject<string>, 'value' | 'added' | 'removed'>;

/** A word differ for one page: each call diffs two texts within what is left of the page's budget. */
export function boundedWordDiff(): (before: string, after: string) => DiffPart[] {
  const deadline = Date.now() + PAGE_BUDGET_MS;
  return (before, after) => {
    if (before === after) return [{ value: before, added: false, removed: false }];
    const left = deadline - Date.now();
    const parts =
      left > 0
        ? diff().diffWordsWithSpace(before, after, {
            timeout: Math.min(left, ONE_DIFF_MS),
            maxEditLength: MAX_WORD_EDITS,
          })
        : undefined;
    return parts ?? wholeChange(before, after);
  };
}

function wholeChange(before: string, after: string): DiffPart[] {
  return [
    ...(before ? [{ value: before, added: false, removed: true }] : []),
    ...(after ? [{ value: after, added: true, removed: false }] : []),
  ];
}
