import type { OperationSpec } from '../../src/api/catalogue.ts';

// What the MCP server promises: it has no tool that starts a translation or a revision, and none that reports
// per-file translation status. An operation is judged by what names it (operationId, the literal path
// segments, the summary), not by its schemas, so a glossary entry's `translations` field is no concern.
//
// - The verbs translate / re-translate / revise, and the nouns revision, job or run of a translation,
//   name translation work anywhere.
// - The noun translation(s) names translation work too, except in glossary operations, where it means a
//   term's rendering in another language (vocabulary, not work).
// - Status or progress next to a file or a translation is per-file translation status.

type Named = Pick<OperationSpec, 'operationId' | 'path' | 'summary'>;

const WORK_VERB = /^(re-?)?translat(e|es|ed|ing)$|^revis(e|es|ed|ing|ion|ions)$/;
const TRANSLATION_NOUN = /^(re-?)?translations?$/;
const FILE = /^files?$/;
const STATUS = /^(status|statuses|progress)$/;

/** Why an operation must not become an MCP tool, or undefined when it may. */
export function translationWorkReason(op: Named): string | undefined {
  const glossary = literalSegments(op.path).some((segment) => segment.startsWith('glossar'));
  const sources: [string, string[]][] = [
    ['operationId', camelWords(op.operationId)],
    ['path', literalSegments(op.path).flatMap((segment) => segment.split(/[-_.]/))],
    [
      'summary',
      op.summary
        .toLowerCase()
        .split(/[^a-z-]+/)
        .filter(Boolean),
    ],
  ];
  for (const [where, words] of sources) {
    const verb = words.find((word) => WORK_VERB.test(word));
    if (verb) return `its ${where} names translation or revision work ("${verb}")`;
    const noun = words.find((word) => TRANSLATION_NOUN.test(word));
    if (noun && !glossary) return `its ${where} names a translation ("${noun}") outside the glossary`;
    const status = words.find((word) => STATUS.test(word));
    if (status && words.some((word) => FILE.test(word) || TRANSLATION_NOUN.test(word))) {
      return `its ${where} reports per-file or translation status ("${status}")`;
    }
  }
  return undefined;
}

function camelWords(identifier: string): string[] {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

function literalSegments(path: string): string[] {
  return path
    .toLowerCase()
    .split('/')
    .filter((segment) => segment && !segment.startsWith('{'));
}
