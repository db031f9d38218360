// Process entry: `npm start` runs `node src/main.mjs`; the service itself starts in main.ts.
//
// Plain JavaScript on purpose. Node runs our TypeScript by stripping its types, and the stripper (a
// WebAssembly module) stays resident once loaded: about 17 MB. Node's compile cache keeps the stripped code
// of every module with its compiled code, so with the cache warm (every start but the first after an
// install or an upgrade, as long as its folder survives) no module needs stripping, and the stripper is
// never loaded, provided the entry itself is not TypeScript. NODE_COMPILE_CACHE names the folder; by
// default it is one under the system's temporary folder.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { runService } = await import('./main.ts');
await runService();
