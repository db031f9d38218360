// CI: regenerates into a temporary folder and fails when generated/ differs, naming the files.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const out = mkdtempSync(join(tmpdir(), 'l10n-codegen-'));
try {
  execFileSync(process.execPath, ['codegen/generate.ts', out], { stdio: 'inherit' });
  try {
    execFileSync('diff', ['-r', '-q', out, 'generated'], { stdio: 'pipe' });
  } catch (error) {
    const listing = (error as { stdout?: Buffer }).stdout?.toString() ?? '';
    console.error(`generated/ is stale; run \`npm run codegen\` and commit the result:\n${listing}`);
    process.exit(1);
  }
  console.log('generated/ is fresh');
} finally {
  rmSync(out, { recursive: true, force: true });
}
