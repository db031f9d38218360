import { describe, expect, it } from 'vitest';
import { loadCatalogue } from '../../src/api/catalogue.ts';
import { translationWorkReason } from '../../src/mcp/translation-work.ts';

// Spec 1.5: no MCP tool starts a translation or a revision, or reports per-file translation status.
// deriveTools() refuses such an operation at start too; this test names the offender in CI first.

describe('spec 1.5: translation work is never an MCP tool', () => {
  it('no operation tagged x-mcp in openapi.yaml starts translations or revisions or reports file status', () => {
    const offenders = [...loadCatalogue().operations.values()]
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
  ])('refuses %s %s (%s)', (op) => {
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
  ])('allows %s %s (%s)', (op) => {
    expect(translationWorkReason(op)).toBeUndefined();
  });
});
