import { domainToASCII } from 'node:url';
import { Migration } from '@mikro-orm/migrations';

// A provider's e-mail is stored with its domain in ASCII (punycode), the form organizations verify domains
// in and invitations are sent to (src/identity/providers.ts). Addresses stored before that kept the Unicode
// a provider wrote (uma@bücher.example): removing that domain left them verified, and an invitation to
// uma@xn--bcher-kva.example did not find them. They are rewritten here, the local part as it is. An address
// whose domain is no domain name (domainToASCII gives nothing) stays as it is.
export class Migration20261127140000_ascii_email_domains extends Migration {
  override async up(): Promise<void> {
    for (const table of ['users', 'identities']) {
      const rows = (await this.execute(`select id, email from ${table} where email ~ '[^[:ascii:]]'`)) as {
        id: string;
        email: string;
      }[];
      for (const { id, email } of rows) {
        const at = email.lastIndexOf('@');
        const domain = domainToASCII(email.slice(at + 1).toLowerCase());
        if (!domain) continue;
        const ascii = `${email.slice(0, at)}@${domain}`;
        if (ascii !== email) await this.execute(`update ${table} set email = ? where id = ?`, [ascii, id]);
      }
    }
  }
}
