// Import rules, checked in CI (`npm run lint:deps`). docs/architecture.md explains the layers.
//
// Layers, bottom to top. A module may import from its own layer and from the layers below it, never
// from one above: that is what keeps the service readable from the bottom up and free of cycles.
const LAYERS = [
  ['config'], // settings, validated once
  ['lib'], // service-wide utilities: logging, metrics, tracing, ids, text rules
  ['db'], // entities, migrations, the ORM and the embedded PostgreSQL
  ['context'], // ServiceContext: what every part is built from
  ['authz'], // callers, scopes, roles, the Casbin policy, account tokens
  ['domain'], // domain rules and their errors; demo seed
  ['identity'], // people, browser sessions, upstream sign-in providers, organization domains
  ['api'], // the operation pipeline, handlers, the REST door
  ['mcp', 'web'], // the MCP door; the browser door and the page toolkit
  ['oauth'], // the authorization server (its pages come from web)
  ['http-errors', 'app'], // assembly of the doors
  ['server'], // the HTTP server around the app
  ['main', 'migrate', 'cli'], // process entry points
];

const at = (name) => `^src/${name}(\\.ts$|/)`;
const layerRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${layer.join('-')}`,
  comment: `${layer.join(', ')} may not import from a layer above it`,
  severity: 'error',
  from: { path: layer.map(at) },
  to: {
    path: LAYERS.slice(index + 1)
      .flat()
      .map(at),
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, between files (and so, with the layer rules, between folders)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'src-not-to-tests',
      comment: 'The service never imports test code',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^test/' },
    },
    {
      name: 'src-not-to-dev-dependencies',
      comment: 'A production install (npm ci --omit=dev) must have everything src/ imports',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['npm', 'npm-optional'] },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|generated/sdk/client|generated/sdk/core)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
