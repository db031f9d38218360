import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCatalogue } from '../src/api/catalogue.ts';
import { loadPolicy, ROLES } from '../src/authz/policy.ts';
import { ALL_SCOPES } from '../src/authz/scopes.ts';

/** generated/authorization-matrix.md: what each role may do, and which operations each scope opens. */
export async function writePolicyMatrix(outDir: string): Promise<void> {
  const policy = await loadPolicy();
  const catalogue = await loadCatalogue();
  const lines = [
    '# Role × scope matrix',
    '',
    'Generated from `policies/policy.csv` by `npm run codegen`; do not edit. A token needs the scope **and** one',
    "of its holder's roles on the target account must allow it. ✅ allowed, · denied.",
    '',
    `| scope | ${ROLES.join(' | ')} | operations |`,
    `| --- | ${ROLES.map(() => ':---:').join(' | ')} | --- |`,
  ];
  for (const scope of ALL_SCOPES) {
    const [object, action] = scope.split(':') as [string, string];
    const cells = ROLES.map((role) => (policy.allows([role], object, action) ? '✅' : '·'));
    const operations = [...catalogue.operations.values()]
      .filter((op) => op.scope === scope)
      .map((op) => `\`${op.operationId}\``)
      .join(', ');
    lines.push(`| \`${scope}\` | ${cells.join(' | ')} | ${operations || '—'} |`);
  }
  writeFileSync(join(outDir, 'authorization-matrix.md'), `${lines.join('\n')}\n`);
}
