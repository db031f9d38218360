import { describe, expect, it } from 'vitest';
import { loadCatalogue } from '../../src/api/catalogue.ts';
import { translationWorkReason } from './translation-work.ts';

// No MCP tool starts a translation or a revision, or reports per-file translation status. The check is
// a word rule over names and summaries, so it lives here, in CI, where a false positive costs a reworded
// summary, and not at start-up, where it would stop a running service.

describe('translation work is never an MCP tool', () => {
  it('no operation tagged x-mcp in openapi.yaml starts translations or revisions or reports file status', async () => {
    const offenders = [...(await loadCatalogue()).operations.values()]
      .filter((op) => op.mcp)
      .map((op) => [op.operationId, translationWorkReason(op)])
      .filter(([, reason]) => reason !== undefined);
    expect(offenders).toEqual([]);
  });

  const named = (operationId: string, path: string, summary: string) => ({ operationId, path, summary });

  it.each([
    named('startTranslation', '/api/v1/accounts/{account}/projects/{project}/jobs', 'Start a job'),
    named('createJob', '/api/v1/accounts/{account}/projects/{project}/translations', 'Create a job'),
    named('createJob', '/api/v1/accounts/{account}/projects/{project}/jobs', 'Translate the project'),
    named('retranslateFile', '/api/v1/accounts/{account}/projects/{project}/files/{file}', 'Redo a file'),
    named('requestRevision', '/api/v1/accounts/{account}/projects/{project}/reviews', 'Ask for a review'),
    named('createReview', '/api/v1/accounts/{account}/projects/{project}/revisions', 'Open a review'),
    named('reviseFile', '/api/v1/accounts/{account}/projects/{project}/files/{file}', 'Improve a file'),
    named('getFileStatus', '/api/v1/accounts/{account}/projects/{project}/files/{file}', 'Get a file'),
    named('getFile', '/api/v1/accounts/{account}/projects/{project}/files/{file}/status', 'Get a file'),
    named(
      'listFiles',
      '/api/v1/accounts/{account}/projects/{project}/files',
      'Show the progress of each file',
    ),
    named('getProgress', '/api/v1/accounts/{account}/projects/{project}/progress', 'Translation progress'),
    named(
      'getGlossaryStatus',
      '/api/v1/accounts/{account}/glossary/status',
      'Translation status of the glossary',
    ),
  ])('refuses $operationId ($summary)', (op) => {
    expect(translationWorkReason(op)).toBeDefined();
  });

  it.each([
    named('listProjects', '/api/v1/accounts/{account}/projects', "List an account's projects"),
    named('getGlossary', '/api/v1/accounts/{account}/glossary', 'Get the glossary with its translations'),
    named('saveGlossary', '/api/v1/accounts/{account}/glossary', 'Save glossary terms and translations'),
    named('listGlossaryVersions', '/api/v1/accounts/{account}/glossary/versions', 'Glossary history'),
    named('getVoice', '/api/v1/accounts/{account}/voice', 'Get the voice configuration'),
    named('listAccountModels', '/api/v1/accounts/{account}/models', 'List account models'),
    named('updateProject', '/api/v1/accounts/{account}/projects/{project}', 'Change the target locales'),
  ])('allows $operationId ($summary)', (op) => {
    expect(translationWorkReason(op)).toBeUndefined();
  });
});
