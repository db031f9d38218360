// Rebuilds generated/ from openapi.yaml: the typed fetch SDK (@hey-api/openapi-ts) and the derived
// Markdown tables (docs). `npm run codegen`; CI runs check-fresh.ts and fails when generated/ is stale.

import { writeOperationIndex } from './operations.ts';
import { writePolicyMatrix } from './policy-matrix.ts';
import { generateSdk } from './sdk.ts';
import { writeGeneratedTables } from './tables.ts';

const outDir = process.argv[2] ?? 'generated';
await generateSdk(`${outDir}/sdk`);
writeOperationIndex(outDir);
await writePolicyMatrix(outDir);
await writeGeneratedTables(outDir);
console.log(`generated ${outDir}/`);
