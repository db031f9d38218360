import { Migration } from '@mikro-orm/migrations';

// A rotated refresh token's encrypted successor gets a column of its own (src/oauth/refresh-grace.ts). It was
// a member of the token's JSON payload, so every rotation rewrote the payload, and since an index reads the
// payload (grants by account and client), PostgreSQL could not update the row in place: each rotation added
// new entries to every index of the table and left the old ones for vacuum. Setting two columns no index
// reads lets the update stay on its page (a HOT update). Adding a nullable column without a default changes
// no row. Tokens rotated before this release keep their successor in the payload, where it is still read.
export class Migration20261126000000_refresh_successor extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table oidc_models add column successor_encrypted text;');
  }
}
