import { createClient } from '@hey-api/openapi-ts';

export async function generateSdk(output: string): Promise<void> {
  await createClient({
    input: 'openapi.yaml',
    output: { path: output, importFileExtension: '.ts', postProcess: [] },
    plugins: [
      '@hey-api/client-fetch',
      '@hey-api/typescript',
      { name: '@hey-api/sdk', operations: { strategy: 'flat' } },
    ],
    logs: { level: 'silent' },
  });
}
