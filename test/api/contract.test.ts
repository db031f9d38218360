import { describe, expect, it } from 'vitest';
import { loadCatalogue } from '../../src/api/catalogue.ts';

// openapi.yaml is read by people (SDK docs), agents (MCP tool descriptions) and machines (routing,
// validation). These are the house rules every operation keeps, checked so a new one cannot forget them.
const catalogue = await loadCatalogue();
const operations = [...catalogue.operations.values()];

describe('openapi.yaml house rules', () => {
  it.each(operations.map((op) => [op.operationId, op] as const))(
    '%s is documented for a reader',
    (_id, op) => {
      const raw = op.raw as {
        requestBody?: {
          content?: Record<string, { example?: unknown; examples?: unknown; schema?: unknown }>;
        };
        responses?: Record<string, unknown>;
      };
      expect(op.summary.length).toBeGreaterThan(5);
      expect(op.description.length).toBeGreaterThan(20);
      const body = raw.requestBody?.content?.['application/json'];
      if (body) expect(body.example ?? body.examples, 'request body example').toBeDefined();
      const statuses = Object.keys(raw.responses ?? {});
      expect(statuses).toContain('401');
      // The failed-authentication limiter stands before every operation (429 with Retry-After).
      expect(statuses).toContain('429');
      expect(statuses).toContain('403');
      if (op.accountParam) expect(statuses).toContain('404');
      const parameters = (raw as { parameters?: unknown[] }).parameters ?? [];
      // Anything the caller sends can be malformed, and the SDK documents the 400 only if this lists it.
      if (body || parameters.length > 0) expect(statuses).toContain('400');
      // A body can be too large or sent in a charset or Content-Encoding we do not read; and any operation
      // can meet a database outage (503 with Retry-After): the SDK and the fuzz suite rely on these being listed.
      if (body) expect(statuses).toEqual(expect.arrayContaining(['413', '415']));
      expect(statuses).toContain('503');
    },
  );

  it('gives every operation a unique, camelCase operationId and every MCP tool a unique snake_case name', () => {
    for (const op of operations) expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
    const names = operations.filter((op) => op.mcp?.name).map((op) => op.mcp!.name!);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z_]+$/);
    expect(new Set(names).size).toBe(names.length);
  });

  it('keeps every path under the versioned /api/v1 prefix', () => {
    for (const op of operations) expect(op.path).toMatch(/^\/api\/v1\//);
  });
});
