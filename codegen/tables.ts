import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCatalogue } from '../src/api/catalogue.ts';
import { createToolRegistry } from '../src/mcp/index.ts';

/** generated/mcp-tools.md: the MCP tools as the server derives them from openapi.yaml at start. */
export async function writeGeneratedTables(outDir: string): Promise<void> {
  const { all } = createToolRegistry(await loadCatalogue());
  const lines = [
    '# MCP tools',
    '',
    'Generated from the `x-mcp` operations of `openapi.yaml` by `npm run codegen`; do not edit. `tools/list`',
    'shows a tool only to a token that holds its scope. Annotations: 👁 read-only, ♻ idempotent,',
    '💥 destructive (all tools are closed-world: `openWorldHint: false`).',
    '',
    '| tool | scope | annotations | arguments (* required) | operation | description |',
    '| --- | --- | :---: | --- | --- | --- |',
  ];
  for (const { tool, spec } of all) {
    const hints = tool.annotations ?? {};
    const annotations =
      [hints.readOnlyHint && '👁', hints.idempotentHint && '♻', hints.destructiveHint && '💥']
        .filter(Boolean)
        .join(' ') || '—';
    const required = new Set(tool.inputSchema.required ?? []);
    const args =
      Object.keys(tool.inputSchema.properties ?? {})
        .map((name) => `\`${name}\`${required.has(name) ? '*' : ''}`)
        .join(', ') || '—';
    const firstLine = (tool.description ?? '').split('\n')[0]!.replace(/\|/g, '\\|');
    lines.push(
      `| \`${tool.name}\` | \`${spec.scope}\` | ${annotations} | ${args} | ` +
        `\`${spec.method.toUpperCase()} ${spec.path}\` | ${firstLine} |`,
    );
  }
  writeFileSync(join(outDir, 'mcp-tools.md'), `${lines.join('\n')}\n`);
}
