import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';
import { Migration20261122010000_oauth } from './Migration20261122010000_oauth.ts';
import { Migration20261123010000_identity } from './Migration20261123010000_identity.ts';
import { Migration20261123030000_token_grant } from './Migration20261123030000_token_grant.ts';
import { Migration20261123060000_audit_log } from './Migration20261123060000_audit_log.ts';
import { Migration20261123080000_list_indexes } from './Migration20261123080000_list_indexes.ts';
import { Migration20261125000000_credential_epoch } from './Migration20261125000000_credential_epoch.ts';
import { Migration20261126000000_refresh_successor } from './Migration20261126000000_refresh_successor.ts';
import { Migration20261127000000_epoch_never_repeats } from './Migration20261127000000_epoch_never_repeats.ts';
import { Migration20261127100000_idn_domains } from './Migration20261127100000_idn_domains.ts';
import { Migration20261127120000_audit_append_only } from './Migration20261127120000_audit_append_only.ts';
import { Migration20261127140000_ascii_email_domains } from './Migration20261127140000_ascii_email_domains.ts';
import { Migration20261128000000_edit_revisions } from './Migration20261128000000_edit_revisions.ts';

// Listed explicitly (not globbed) so the same list works from source, in tests and in any bundle.
export const migrations = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
  { name: 'Migration20261122010000_oauth', class: Migration20261122010000_oauth },
  { name: 'Migration20261123010000_identity', class: Migration20261123010000_identity },
  { name: 'Migration20261123030000_token_grant', class: Migration20261123030000_token_grant },
  { name: 'Migration20261123060000_audit_log', class: Migration20261123060000_audit_log },
  { name: 'Migration20261123080000_list_indexes', class: Migration20261123080000_list_indexes },
  { name: 'Migration20261125000000_credential_epoch', class: Migration20261125000000_credential_epoch },
  { name: 'Migration20261126000000_refresh_successor', class: Migration20261126000000_refresh_successor },
  { name: 'Migration20261127000000_epoch_never_repeats', class: Migration20261127000000_epoch_never_repeats },
  { name: 'Migration20261127100000_idn_domains', class: Migration20261127100000_idn_domains },
  { name: 'Migration20261127120000_audit_append_only', class: Migration20261127120000_audit_append_only },
  { name: 'Migration20261127140000_ascii_email_domains', class: Migration20261127140000_ascii_email_domains },
  { name: 'Migration20261128000000_edit_revisions', class: Migration20261128000000_edit_revisions },
];
