import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';
import { Migration20261122010000_oauth } from './Migration20261122010000_oauth.ts';

// Listed explicitly (not globbed) so the same list works from source, in tests and in any bundle.
export const migrations = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
  { name: 'Migration20261122010000_oauth', class: Migration20261122010000_oauth },
];
