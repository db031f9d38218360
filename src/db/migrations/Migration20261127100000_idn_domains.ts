import { Migration } from '@mikro-orm/migrations';

// Internationalised domains are claimed in their ASCII (punycode) form, and some of them have a punycode
// top-level domain too (xn--p1ai is .рф): the first check allowed only letters there, so such a domain,
// which the API accepts, was refused by the database with a generic message.
export class Migration20261127100000_idn_domains extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
alter table organization_domains
  drop constraint organization_domains_domain_check,
  add constraint organization_domains_domain_check
    check (domain = lower(domain) and domain ~ '^[a-z0-9.-]+\\.([a-z]{2,}|xn--[a-z0-9-]+)$');
`);
  }
}
