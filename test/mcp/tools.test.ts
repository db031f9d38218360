import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { type Catalogue, loadCatalogue } from '../../src/api/catalogue.ts';
import { toOperationArguments, toToolResult } from '../../src/mcp/call.ts';
import { deriveTools, snakeCase, type ToolDefinition } from '../../src/mcp/tools.ts';

// Tool derivation from a document: no service needed, so these cover the corners the real
// openapi.yaml does not (yet) have: header parameters, non-object responses, collisions, recursion.

const problemResponse = { description: 'x', content: { 'application/problem+json': { schema: {} } } };

async function catalogueOf(
  paths: Record<string, unknown>,
  schemas: Record<string, unknown> = {},
): Promise<Catalogue> {
  const document = {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    paths,
    components: {
      schemas: {
        Handle: { type: 'string', pattern: '^[a-z]+$', example: 'acme' },
        Thing: {
          type: 'object',
          required: ['id', 'name'],
          properties: { id: { type: 'string' }, name: { type: 'string' }, example: { type: 'string' } },
          example: { id: '1', name: 'n' },
        },
        ...schemas,
      },
      parameters: {
        Account: {
          name: 'account',
          in: 'path',
          required: true,
          description: 'Handle of the account.',
          schema: { $ref: '#/components/schemas/Handle' },
        },
      },
    },
  };
  // loadCatalogue reads a YAML file, and JSON is YAML.
  const file = join(tmpdir(), `mcp-tools-${process.pid}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, JSON.stringify(document));
  try {
    return await loadCatalogue(file);
  } finally {
    rmSync(file);
  }
}

const op = (extra: Record<string, unknown>) => ({
  summary: 'Do it',
  description: 'Does it.',
  security: [{ bearerAuth: ['project:write'] }],
  'x-mcp': {},
  responses: { '400': problemResponse },
  ...extra,
});

const thingResponse = (status: string) => ({
  [status]: {
    description: 'ok',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
  },
});

const only = (catalogue: Catalogue): ToolDefinition => {
  const tools = deriveTools(catalogue);
  expect(tools).toHaveLength(1);
  return tools[0]!;
};

describe('tool derivation', async () => {
  it('builds one flat input schema from path, query, header parameters and body fields, refs inlined', async () => {
    const definition = only(
      await catalogueOf({
        '/api/v1/accounts/{account}/things/{thing}': {
          put: op({
            operationId: 'replaceThing',
            'x-account-param': 'account',
            parameters: [
              { $ref: '#/components/parameters/Account' },
              { name: 'thing', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'dryRun', in: 'query', schema: { type: 'boolean' } },
              { name: 'If-Match', in: 'header', schema: { type: 'string' } },
            ],
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    additionalProperties: false,
                    required: ['name'],
                    properties: { name: { type: 'string' }, owner: { $ref: '#/components/schemas/Handle' } },
                  },
                },
              },
            },
            responses: thingResponse('200'),
          }),
        },
      }),
    );
    const { tool } = definition;
    expect(tool.name).toBe('replace_thing');
    expect(tool.inputSchema).toEqual({
      type: 'object',
      properties: {
        account: { type: 'string', pattern: '^[a-z]+$', description: 'Handle of the account.' },
        thing: { type: 'string' },
        dryRun: { type: 'boolean' },
        if_match: { type: 'string' },
        name: { type: 'string' },
        owner: { type: 'string', pattern: '^[a-z]+$' },
      },
      required: ['account', 'thing', 'name'],
      additionalProperties: false,
    });
    expect(tool.outputSchema).toEqual({
      type: 'object',
      required: ['id', 'name'],
      properties: { id: { type: 'string' }, name: { type: 'string' }, example: { type: 'string' } },
    });
    expect(tool.annotations).toEqual({
      title: 'Do it',
      readOnlyHint: false,
      // A PUT replaces what was there.
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tool.description).toContain('Requires the project:write scope.');
    expect(tool.description).toContain('call list_accounts first');

    const split = toOperationArguments(definition, {
      account: 'acme',
      thing: 't1',
      dryRun: true,
      if_match: '"v3"',
      name: 'New',
    });
    expect(split).toEqual({
      params: { account: 'acme', thing: 't1' },
      query: { dryRun: true },
      headers: { 'if-match': '"v3"' },
      body: { name: 'New' },
    });
  });

  it('fails at start when a body field and a parameter would be the same argument', async () => {
    const catalogue = await catalogueOf({
      '/api/v1/accounts/{account}/things': {
        post: op({
          operationId: 'createThing',
          parameters: [{ $ref: '#/components/parameters/Account' }],
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  properties: { account: { type: 'string' } },
                },
              },
            },
          },
          responses: thingResponse('201'),
        }),
      },
    });
    expect(() => deriveTools(catalogue)).toThrow(/"account".*rename one of them/);
  });

  it('wraps a non-object response in { result }, keeps allOf objects, and gives a 204 no output schema', async () => {
    const tools = deriveTools(
      await catalogueOf({
        '/api/v1/names': {
          get: op({
            operationId: 'listNames',
            security: [{ bearerAuth: ['project:read'] }],
            responses: {
              '200': {
                description: 'ok',
                content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } },
              },
            },
          }),
          post: op({
            operationId: 'createName',
            responses: {
              '201': {
                description: 'ok',
                content: {
                  'application/json': {
                    schema: {
                      allOf: [
                        { $ref: '#/components/schemas/Thing' },
                        { type: 'object', required: ['secret'], properties: { secret: { type: 'string' } } },
                      ],
                    },
                  },
                },
              },
            },
          }),
          delete: op({
            operationId: 'clearNames',
            'x-mcp': { name: 'clear_all_names' },
            security: [{ bearerAuth: ['project:delete'] }],
            responses: { '204': { description: 'gone' } },
          }),
        },
      }),
    );
    const [list, extended, clear] = tools;
    expect(list!.tool.outputSchema).toEqual({
      type: 'object',
      properties: { result: { type: 'array', items: { type: 'string' } } },
      required: ['result'],
      additionalProperties: false,
    });
    expect(list!.tool.annotations).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
    });
    expect(toToolResult(list!, { status: 200, body: ['a', 'b'] })).toEqual({
      structuredContent: { result: ['a', 'b'] },
      content: [{ type: 'text', text: '{"result":["a","b"]}' }],
    });

    expect(extended!.tool.outputSchema).toMatchObject({
      type: 'object',
      allOf: [{ type: 'object' }, { type: 'object' }],
    });
    expect(extended!.wrapsResult).toBe(false);

    expect(clear!.tool.name).toBe('clear_all_names');
    expect(clear!.tool.outputSchema).toBeUndefined();
    expect(clear!.tool.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(toToolResult(clear!, { status: 204 }).structuredContent).toBeUndefined();

    const failure = toToolResult(list!, {
      status: 404,
      body: { type: 'x', title: 'Not found', status: 404 },
    });
    expect(failure.isError).toBe(true);
    expect(failure.structuredContent).toBeUndefined();
    expect(JSON.parse((failure.content[0] as { text: string }).text).status).toBe(404);
  });

  it('refuses recursive schemas, names that are not snake_case, and duplicate tool names', async () => {
    const recursive = await catalogueOf(
      { '/api/v1/tree': { get: op({ operationId: 'getTree', responses: thingResponse('200') }) } },
      {
        Thing: {
          type: 'object',
          properties: { children: { type: 'array', items: { $ref: '#/components/schemas/Thing' } } },
        },
      },
    );
    expect(() => deriveTools(recursive)).toThrow(
      /getTree.* uses a recursive schema, which MCP cannot inline/,
    );

    const badName = await catalogueOf({
      '/api/v1/a': {
        get: op({ operationId: 'getA', 'x-mcp': { name: 'GetA' }, responses: thingResponse('200') }),
      },
    });
    expect(() => deriveTools(badName)).toThrow(/not snake_case/);

    const duplicate = await catalogueOf({
      '/api/v1/a': {
        get: op({ operationId: 'getA', 'x-mcp': { name: 'get_it' }, responses: thingResponse('200') }),
      },
      '/api/v1/b': {
        get: op({ operationId: 'getB', 'x-mcp': { name: 'get_it' }, responses: thingResponse('200') }),
      },
    });
    expect(() => deriveTools(duplicate)).toThrow(/both become the MCP tool "get_it"/);
  });

  it('reports an argument the tool does not have as a validation problem', async () => {
    const definition = only(
      await catalogueOf({
        '/api/v1/a': { get: op({ operationId: 'getA', responses: thingResponse('200') }) },
      }),
    );
    const split = toOperationArguments(definition, { surprise: 1 });
    expect(split).toMatchObject({ status: 400, errors: [{ pointer: '/arguments/surprise' }] });
  });

  it('converts operationIds to snake_case', () => {
    expect(snakeCase('listProjects')).toBe('list_projects');
    expect(snakeCase('getOAuthApps')).toBe('get_o_auth_apps');
    expect(snakeCase('If-Match')).toBe('if_match');
    expect(snakeCase('createAPIToken')).toBe('create_api_token');
  });
});

const catalogue = await loadCatalogue();

describe('the tools of openapi.yaml', () => {
  const tools = deriveTools(catalogue);
  // Strict mode refuses what a lenient validator lets through: unknown keywords (a stray key such as a
  // description cut at a comma), `required` naming no property, ambiguous types. Some MCP clients validate
  // this strictly, so every schema a tool shows must compile here.
  const strict = () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(ajv);
    return ajv;
  };

  it('have input and output schemas that compile with Ajv in strict mode, and reject a wrong shape', () => {
    expect(tools.length).toBeGreaterThan(0);
    for (const { tool } of tools) {
      expect(JSON.stringify(tool), tool.name).not.toContain('$ref');
      expect(tool.inputSchema.type).toBe('object');
      const input = strict().compile(tool.inputSchema);
      expect(input('not an object'), tool.name).toBe(false);
      if (tool.outputSchema) {
        const output = strict().compile(tool.outputSchema);
        expect(output('not an object'), tool.name).toBe(false);
      }
    }
    const listProjects = tools.find((t) => t.tool.name === 'list_projects')!;
    const check = strict().compile(listProjects.tool.outputSchema!);
    expect(check({ items: [], nextCursor: null })).toBe(true);
    expect(check({ items: [{ handle: 'x' }], nextCursor: null })).toBe(false);
  });

  it('describe every argument of every tool', () => {
    const undescribed = tools.flatMap(({ tool }) =>
      Object.entries(tool.inputSchema.properties ?? {})
        .filter(([, schema]) => typeof (schema as { description?: unknown }).description !== 'string')
        .map(([argument]) => `${tool.name}.${argument}`),
    );
    expect(undescribed).toEqual([]);
  });

  it('speak in tool and argument names, never in REST operationIds or HTTP headers', () => {
    const operationIds = tools.map((definition) => definition.spec.operationId);
    for (const { tool } of tools) {
      const text = JSON.stringify({ description: tool.description, input: tool.inputSchema });
      for (const operationId of operationIds) {
        expect(text, `${tool.name} names ${operationId}`).not.toMatch(new RegExp(`\\b${operationId}\\b`));
      }
      expect(text, tool.name).not.toMatch(/\bIf-Match\b|\bETag\b/);
    }
  });
});

describe('the annotations of the tools of openapi.yaml', () => {
  const tools = new Map(deriveTools(catalogue).map((definition) => [definition.tool.name, definition]));

  it('call destructive whatever removes or overwrites, and only what adds (or keeps every version) not', () => {
    // MCP reads destructiveHint: false as "only additive updates", which a client may run without asking.
    const destructive = (name: string) => tools.get(name)!.tool.annotations?.destructiveHint;
    for (const name of [
      'delete_project',
      'update_project',
      'update_model',
      'update_member_role',
      'update_organization',
      'update_glossary_settings',
      'remove_member',
      // A POST, and a new version, but its purpose is taking entries out of what agents work from.
      'remove_glossary_entries',
    ]) {
      expect(destructive(name), name).toBe(true);
    }
    for (const name of [
      'create_project',
      'save_voice',
      'save_glossary',
      'upsert_glossary_entries',
      'list_projects',
    ]) {
      expect(destructive(name), name).toBe(false);
    }
  });

  it('call no save of a versioned resource idempotent: each call stores a new version with a new etag', () => {
    // PUT on a resource with an ETag (x-etag): the same arguments twice make v2 and v3, and a repeat with
    // the same if_match is refused with 412, so a client must not retry it as if nothing changed.
    for (const name of ['save_voice', 'save_glossary', 'update_glossary_settings']) {
      expect(tools.get(name)!.spec.method, name).toBe('put');
      expect(tools.get(name)!.tool.annotations, name).toMatchObject({
        readOnlyHint: false,
        idempotentHint: false,
      });
    }
    for (const name of [
      'get_voice',
      'get_glossary',
      'delete_project',
      'revoke_token',
      'update_project',
      'update_member_role',
    ]) {
      expect(tools.get(name)!.tool.annotations?.idempotentHint, name).toBe(true);
    }
    // A PATCH of the glossary stores a new version each time; a POST creates something each time.
    for (const name of ['upsert_glossary_entries', 'create_project', 'create_token']) {
      expect(tools.get(name)!.tool.annotations?.idempotentHint, name).toBe(false);
    }
  });
});
