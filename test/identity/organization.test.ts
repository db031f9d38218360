// An organization's own sign-in: an admin claims a domain and verifies it against a DNS server this test
// runs; configures the organization's provider (a third oidc-provider instance); people at that domain who
// sign in through it land as members, unless their e-mail is unverified or at a domain not verified. What
// that provider says about an e-mail at a domain the organization did not verify is not trusted. With the
// provider required, neither GitHub with an e-mail at the domain nor a personal GitHub a member linked gets in.
import { randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { CookieJar, csrfOf, postForm, sql, uniqueHandle } from '../oauth/helpers.ts';
import { startTxtServer, type TxtServer } from '../support/dns-server.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { startOidcUpstream, upstreamLogin, useUpstreamSignIn } from './upstream.ts';

let dns: TxtServer;
let admin: TestUser;
const org = uniqueHandle('acme');
const domain = `${org}.example`;

beforeAll(async () => {
  dns = await startTxtServer();
});
afterAll(() => dns?.close());
const {
  service,
  upstream: idp,
  github,
} = useUpstreamSignIn('org', { env: () => ({ DNS_SERVERS: dns.address }) });
beforeAll(async () => {
  admin = await createTestUser(service, uniqueHandle('admin'));
  await createTestOrganization(service, org, admin);
});

/** "Sign in with your organization" with this e-mail, through the organization's provider as `login`. */
async function orgSignIn(
  email: string,
  login: string,
): Promise<{ jar: CookieJar; status: number; text: string }> {
  const jar = new CookieJar();
  const start = await jar.fetch(
    `${service.url}/signin/org?email=${encodeURIComponent(email)}&next=/settings/apps`,
  );
  if (start.status !== 303) return { jar, status: start.status, text: await start.text() };
  const back = await upstreamLogin(jar, start.headers.get('location')!, login);
  const done = await jar.fetch(back);
  return { jar, status: done.status, text: await done.text() };
}

/** A form token of this browser session: the dashboard's forms carry the one every page form does. */
async function pageFormToken(jar: CookieJar): Promise<string> {
  const html = await (await jar.fetch(`${service.url}/dashboard`)).text();
  return csrfOf(html.split('action="/dashboard/projects"')[1]!);
}

async function membership(subject: string): Promise<string[]> {
  const rows = (await sql(
    service,
    `select m.role from identities i join memberships m on m.user_id = i.user_id
       join organizations o on o.id = m.organization_id join accounts a on a.id = o.account_id
      where i.subject = $1 and a.handle = $2`,
    [subject, org],
  )) as { role: string }[];
  return rows.map((r) => r.role);
}

describe('organization domains, provider and enrollment', () => {
  it('refuses public e-mail domains and public suffixes', async () => {
    for (const refused of ['gmail.com', 'outlook.com', 'co.uk', 'github.io']) {
      const result = await sdk.addDomain({ client: admin.client, path: { org }, body: { domain: refused } });
      expect(result.response.status, refused).toBe(400);
      expect(result.error?.errors?.[0]?.pointer).toBe('/body/domain');
    }
  });

  it('verifies a domain only once its TXT record is published', async () => {
    const added = await sdk.addDomain({ client: admin.client, path: { org }, body: { domain } });
    expect(added.response.status).toBe(201);
    expect(added.response.headers.get('cache-control')).toBe('no-store'); // the TXT value is shown once
    const record = added.data!.txtRecord;
    expect(record.name).toBe(`_l10n-verification.${domain}`);
    expect(added.data!.verified).toBe(false);

    const before = await sdk.verifyDomain({ client: admin.client, path: { org, domain } });
    expect(before.response.status).toBe(409);
    // A wrong value does not do either.
    dns.records.set(record.name, 'l10n-verification=not-the-value');
    expect((await sdk.verifyDomain({ client: admin.client, path: { org, domain } })).response.status).toBe(
      409,
    );

    dns.records.set(record.name, record.value);
    const after = await sdk.verifyDomain({ client: admin.client, path: { org, domain } });
    expect(after.response.status).toBe(200);
    expect(after.data).toMatchObject({ domain, verified: true });
    const listed = await sdk.listDomains({ client: admin.client, path: { org } });
    expect(listed.data!.items).toEqual([expect.objectContaining({ domain, verified: true })]);

    // One organization at a time: another organization cannot claim it now.
    const rival = await createTestUser(service, uniqueHandle('rival'));
    const rivalOrg = uniqueHandle('rivalorg');
    await createTestOrganization(service, rivalOrg, rival);
    const taken = await sdk.addDomain({ client: rival.client, path: { org: rivalOrg }, body: { domain } });
    expect(taken.response.status).toBe(409);
    // And someone outside the organization does not even see its domains.
    const outsider = await sdk.listDomains({ client: rival.client, path: { org } });
    expect(outsider.response.status).toBe(404);
    expect(outsider.error!.detail).toBe(`No account "${org}", or you cannot see it.`);
    // A member sees the organization, not its domains: a denied read is a 404 whatever its scope's action
    // (organization:admin here), and says so rather than that the organization is missing. It was a 403.
    const plain = await createTestUser(service, uniqueHandle('plain'));
    const publicOrg = uniqueHandle('pubdom');
    await createTestOrganization(service, publicOrg, rival, { visibility: 'public', members: [plain] });
    const denied = await sdk.listDomains({ client: plain.client, path: { org: publicOrg } });
    expect(denied.response.status).toBe(404);
    expect(denied.error!.detail).toBe(
      `Nothing to show in "${publicOrg}": your role there does not allow organization:admin, which this read needs.`,
    );
    // Someone outside a public organization sees it too, and hears the same about its identity provider.
    const stranger = await createTestUser(service, uniqueHandle('strg'));
    const publicRead = await sdk.getIdentityProvider({ client: stranger.client, path: { org: publicOrg } });
    expect(publicRead.response.status).toBe(404);
    expect(publicRead.error!.detail).toMatch(/^Nothing to show in /);
    // A write on an account the caller sees is still a 403.
    const write = await sdk.addDomain({ client: plain.client, path: { org: publicOrg }, body: { domain } });
    expect(write.response.status).toBe(403);
    // A verified domain whose organization has no provider yet: the sign-in page says that, not that no
    // organization has the domain.
    const early = await orgSignIn(`someone@${domain}`, 'someone');
    expect(early.status).toBe(404);
    expect(early.text).toContain('has no sign-in of its own set up at the moment');
  });

  it('configures the organization provider: discovery checked, secret encrypted and never returned', async () => {
    const broken = await sdk.setIdentityProvider({
      client: admin.client,
      path: { org },
      body: { issuer: `${github.url}/nothing-here`, clientId: 'x', clientSecret: 'y' },
    });
    expect(broken.response.status).toBe(400);
    expect(broken.error?.errors?.[0]?.pointer).toBe('/body/issuer');

    const saved = await sdk.setIdentityProvider({
      client: admin.client,
      path: { org },
      body: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        enrollRole: 'member',
      },
    });
    expect(saved.response.status).toBe(200);
    expect(saved.data).toMatchObject({
      issuer: idp.issuer,
      hasClientSecret: true,
      enrollRole: 'member',
      callbackUrl: `${service.url}/signin/callback/org`,
    });
    expect(JSON.stringify(saved.data)).not.toContain(idp.clientSecret);
    const stored = (await sql(
      service,
      `select encode(client_secret_encrypted, 'escape') as secret from organization_sign_in_providers`,
    )) as { secret: string }[];
    expect(stored[0]!.secret).not.toContain(idp.clientSecret);
  });

  it('enrolls a new person at the verified domain as a member, and nobody else', async () => {
    const alice = `alice-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(alice, { email: `${alice}@${domain}`, email_verified: true, preferred_username: alice });
    const signedIn = await orgSignIn(`${alice}@${domain}`, alice);
    expect(signedIn.status).toBe(303);
    expect(await membership(alice)).toEqual(['member']);
    // The organization's admins see who joined that way, in its audit log.
    const events = await sdk.listAuditEvents({
      client: admin.client,
      path: { account: org },
      query: { action: 'member.enroll' },
    });
    expect(events.data!.items).toContainEqual(
      expect.objectContaining({ action: 'member.enroll', resourceType: 'membership' }),
    );

    // The provider does not vouch for the e-mail: signed in, but not enrolled.
    const unverified = `unv-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(unverified, { email: `${unverified}@${domain}`, email_verified: false });
    expect((await orgSignIn(`${unverified}@${domain}`, unverified)).status).toBe(303);
    expect(await membership(unverified)).toEqual([]);

    // A verified e-mail, but at a domain the organization has not verified.
    const elsewhere = `out-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(elsewhere, { email: `${elsewhere}@unverified-${org}.example`, email_verified: true });
    expect((await orgSignIn(`x@${domain}`, elsewhere)).status).toBe(303);
    expect(await membership(elsewhere)).toEqual([]);

    // An e-mail at a domain no organization verified finds no provider.
    const unknown = await orgSignIn(`bob@nobody-${org}.example`, 'bob');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('No organization here');
    // Said at the field, with what was typed kept, on the sign-in page itself.
    expect(unknown.text).toContain(`value="bob@nobody-${org}.example" aria-invalid="true"`);
  });

  it('with the provider required, people at the domain cannot sign in with GitHub', async () => {
    const current = await sdk.getIdentityProvider({ client: admin.client, path: { org } });
    const required = await sdk.setIdentityProvider({
      client: admin.client,
      path: { org },
      // The stored secret is kept when none is sent.
      body: {
        issuer: current.data!.issuer,
        clientId: current.data!.clientId,
        enrollRole: 'member',
        required: true,
      },
    });
    expect(required.response.status).toBe(200);
    github.user = {
      id: 777001,
      login: 'carol',
      emails: [{ email: `carol@${domain}`, primary: true, verified: true }],
    };
    const jar = new CookieJar();
    const start = await jar.fetch(`${service.url}/signin/github`);
    const back = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const refused = await jar.fetch(back.headers.get('location')!);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Sign in with your organization');
    expect(
      await sql(service, `select 1 from identities where provider = 'github' and subject = '777001'`),
    ).toEqual([]);

    // Through the organization's provider they still get in (the stored secret still works).
    const carol = `carol-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(carol, { email: `${carol}@${domain}`, email_verified: true });
    expect((await orgSignIn(`${carol}@${domain}`, carol)).status).toBe(303);
    expect(await membership(carol)).toEqual(['member']);
  });

  it('with the provider required, a member at the domain cannot get in through a personal provider they linked', async () => {
    // Dan signs in through the organization's provider (enrolled), then links a GitHub account whose
    // e-mail is a personal one.
    const dan = `dan-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(dan, { email: `${dan}@${domain}`, email_verified: true });
    const { jar } = await orgSignIn(`${dan}@${domain}`, dan);
    expect(await membership(dan)).toEqual(['member']);
    const personal = {
      id: 777002,
      login: dan,
      emails: [{ email: `${dan}@home.example`, primary: true, verified: true }],
    };
    github.user = personal;
    const start = await jar.fetch(`${service.url}/signin/github?link=1&next=/settings/identities`);
    const atGithub = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    expect((await jar.fetch(atGithub.headers.get('location')!)).status).toBe(303);
    expect(
      await sql(service, `select 1 from identities where provider = 'github' and subject = '777002'`),
    ).toHaveLength(1);

    // Nor is removing the organization's identity, which would leave the GitHub one as the way in.
    const [orgIdentity] = (await sql(service, 'select id from identities where subject = $1', [dan])) as {
      id: string;
    }[];
    const page = await (await jar.fetch(`${service.url}/settings/identities`)).text();
    const action = `/settings/identities/${orgIdentity!.id}/unlink`;
    // The page does not offer it, and says why (it offered a Remove that always answered 409)...
    expect(page).not.toContain(`action="${action}"`);
    expect(page).toContain(
      `@${org} requires signing in through its provider: this method stays while you are a member.`,
    );
    // A form posted all the same (with the page's token, which every form of it carries) is refused.
    const unlink = await postForm(jar, `${service.url}${action}`, {
      csrf: csrfOf(page.slice(page.indexOf('<main'))),
    });
    expect(unlink.status).toBe(409);
    expect(await unlink.text()).toContain('requires signing in through its provider');
    expect(await sql(service, 'select 1 from identities where id = $1', [orgIdentity!.id])).toHaveLength(1);

    // In another browser, that GitHub account is not a way around the organization's provider.
    const elsewhere = new CookieJar();
    const again = await elsewhere.fetch(`${service.url}/signin/github`);
    const back = await fetch(again.headers.get('location')!, { redirect: 'manual' });
    const refused = await elsewhere.fetch(back.headers.get('location')!);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Sign in with your organization');
    expect(elsewhere.cookies.has('l10n_session')).toBe(false);

    // Once no longer a member, the personal account signs in again.
    await sql(
      service,
      `delete from memberships where user_id = (select user_id from identities where subject = $1)`,
      [dan],
    );
    const later = new CookieJar();
    const third = await later.fetch(`${service.url}/signin/github`);
    const returned = await fetch(third.headers.get('location')!, { redirect: 'manual' });
    expect((await later.fetch(returned.headers.get('location')!)).status).toBe(303);
  });
});

describe('an organization provider set by several requests at once', () => {
  it('is saved by each in turn, as a PUT arriving later is, none refused', async () => {
    const another = uniqueHandle('putorg');
    await createTestOrganization(service, another, admin);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        sdk.setIdentityProvider({
          client: admin.client,
          path: { org: another },
          body: {
            issuer: idp.issuer,
            clientId: idp.clientId,
            clientSecret: idp.clientSecret,
            enrollRole: 'member',
          },
        }),
      ),
    );
    // The first to store the row won; the others ran into its unique key (409) instead of finding it.
    expect(answers.map((answer) => answer.response.status)).toEqual(Array(8).fill(200));
  });
});

describe('a domain written in Unicode', () => {
  it('keeps the e-mails its provider vouched for in ASCII, so that removing the domain ends what it vouched for', async () => {
    const unicode = `bücher-${org}.example`;
    const ascii = domainToASCII(unicode);
    const added = await sdk.addDomain({ client: admin.client, path: { org }, body: { domain: ascii } });
    expect(added.response.status).toBe(201);
    dns.records.set(added.data!.txtRecord.name, added.data!.txtRecord.value);
    expect(
      (await sdk.verifyDomain({ client: admin.client, path: { org, domain: ascii } })).response.status,
    ).toBe(200);
    // The provider writes the address in Unicode, as a person would.
    const uma = `uma-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(uma, { email: `${uma}@${unicode}`, email_verified: true });
    expect((await orgSignIn(`${uma}@${unicode}`, uma)).status).toBe(303);
    expect(await membership(uma)).toEqual(['member']);
    const stored = () =>
      sql(service, `select i.email, i.email_verified as verified from identities i where i.subject = $1`, [
        uma,
      ]);
    // Stored in the form invitations are sent to and domains are verified in (it was kept in Unicode).
    expect(await stored()).toEqual([{ email: `${uma}@${ascii}`, verified: true }]);
    const removed = await sdk.removeDomain({ client: admin.client, path: { org, domain: ascii } });
    expect(removed.response.status).toBe(204);
    expect(await stored()).toEqual([{ email: `${uma}@${ascii}`, verified: false }]);
  });
});

describe('changing the organization provider', () => {
  const setProvider = (body: Record<string, unknown>) =>
    sdk.setIdentityProvider({ client: admin.client, path: { org }, body: body as never });
  /** The organization's provider set to `upstream`, with its own secret, enrolling members. */
  const useProvider = (upstream: { issuer: string; clientId: string; clientSecret: string }) =>
    setProvider({
      issuer: upstream.issuer,
      clientId: upstream.clientId,
      clientSecret: upstream.clientSecret,
      enrollRole: 'member',
    });

  it('does not send the stored secret to a new issuer or client id: they need their own', async () => {
    const other = await startOidcUpstream([`${service.url}/signin/callback/org`]);
    try {
      for (const body of [
        { issuer: other.issuer, clientId: idp.clientId },
        { issuer: idp.issuer, clientId: 'another-client' },
      ]) {
        const refused = await setProvider({ ...body, enrollRole: 'member' });
        expect(refused.response.status, JSON.stringify(body)).toBe(400);
        expect(refused.error?.errors?.[0]?.pointer).toBe('/body/clientSecret');
      }
      // The same client keeps its stored secret when the rest of the setting changes.
      const kept = await setProvider({ issuer: idp.issuer, clientId: idp.clientId, enrollRole: 'member' });
      expect(kept.response.status).toBe(200);
      expect(kept.data?.hasClientSecret).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('ends the identities the old issuer issued: a new issuer naming the same subject is someone else', async () => {
    const alice = `alice-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(alice, { email: `${alice}@${domain}`, email_verified: true });
    expect((await orgSignIn(`${alice}@${domain}`, alice)).status).toBe(303);
    const [aliceUser] = (await sql(service, 'select user_id from identities where subject = $1', [
      alice,
    ])) as {
      user_id: string;
    }[];
    const other = await startOidcUpstream([`${service.url}/signin/callback/org`]);
    try {
      expect((await useProvider(other)).response.status).toBe(200);
      // The new provider says `alice` too, for an address of its choosing at the domain.
      other.accounts.set(alice, { email: `someone-else@${domain}`, email_verified: true });
      const second = await orgSignIn(`someone-else@${domain}`, alice);
      expect(second.status).toBe(303);
      const users = (await sql(service, 'select user_id from identities where subject = $1', [alice])) as {
        user_id: string;
      }[];
      expect(users.map((u) => u.user_id)).not.toContain(aliceUser!.user_id);
    } finally {
      expect((await useProvider(idp)).response.status).toBe(200);
      await other.close();
    }
  });
});

describe("an organization's provider vouches only for its own domains", () => {
  it('an e-mail it calls verified at a domain it has not verified opens no invitation of another organization', async () => {
    // Another organization invites someone at a domain of its own.
    const boss = await createTestUser(service, uniqueHandle('boss'));
    const victimOrg = uniqueHandle('victimorg');
    await createTestOrganization(service, victimOrg, boss);
    const invited = `cfo-${randomBytes(3).toString('hex')}@${victimOrg}.example`;
    const created = await sdk.createInvitation({
      client: boss.client,
      path: { org: victimOrg },
      body: { email: invited, role: 'admin' },
    });
    expect(created.response.status).toBe(201);

    // The link leaks to someone who runs the provider of their own organization (the one of this file,
    // with its own verified domain): that provider says the invited address is theirs, and verified.
    const mallory = `mallory-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(mallory, { email: invited, email_verified: true, preferred_username: mallory });
    const signedIn = await orgSignIn(`${mallory}@${domain}`, mallory);
    expect(signedIn.status).toBe(303);
    expect(
      await sql(service, `select email, email_verified from identities where subject = $1`, [mallory]),
    ).toEqual([{ email: invited, email_verified: false }]);

    const link = `${service.url}/invitations/answer?token=${encodeURIComponent(created.data!.acceptToken)}`;
    const page = await signedIn.jar.fetch(link);
    expect(page.status).toBe(200);
    // The page offers no answer: it says the invitation is for an address this person has not verified.
    const html = await page.text();
    expect(html).not.toContain('action="/invitations/answer"');
    expect(html).toContain(`This invitation is for <strong>${invited}</strong>`);
    // And the answer posted anyway (with a form token of this session) is refused.
    const answer = await postForm(signedIn.jar, `${service.url}/invitations/answer`, {
      csrf: await pageFormToken(signedIn.jar),
      token: created.data!.acceptToken,
      answer: 'accept',
    });
    expect(answer.status).toBe(403);
    const members = await sdk.listMembers({ client: boss.client, path: { org: victimOrg } });
    expect(members.data!.items.map((m: { user: string }) => m.user)).toEqual([boss.handle]);
  });

  it('stops vouching for e-mails at a domain the organization removes', async () => {
    // A second domain of this organization, verified, and a person its provider vouched for there.
    const second = `second-${randomBytes(3).toString('hex')}.${domain}`;
    const added = await sdk.addDomain({ client: admin.client, path: { org }, body: { domain: second } });
    expect(added.response.status).toBe(201);
    dns.records.set(added.data!.txtRecord.name, added.data!.txtRecord.value);
    expect(
      (await sdk.verifyDomain({ client: admin.client, path: { org, domain: second } })).response.status,
    ).toBe(200);
    const erin = `erin-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(erin, { email: `${erin}@${second}`, email_verified: true });
    expect((await orgSignIn(`${erin}@${second}`, erin)).status).toBe(303);
    const verified = () => sql(service, 'select email_verified from identities where subject = $1', [erin]);
    expect(await verified()).toEqual([{ email_verified: true }]);
    // The domain goes (it lapses, or passes to someone else): the provider's word about it no longer counts.
    const removed = await sdk.removeDomain({ client: admin.client, path: { org, domain: second } });
    expect(removed.response.status).toBe(204);
    expect(await verified()).toEqual([{ email_verified: false }]);
  });
});

describe('an organization deleted', () => {
  it('takes the identities its provider issued with it: their e-mails vouch for nothing any more', async () => {
    // A second organization with a verified domain of its own and its provider, and a person it signed in.
    const gone = uniqueHandle('goneorg');
    const goneDomain = `${gone}.example`;
    const owner = await createTestUser(service, uniqueHandle('gowner'));
    await createTestOrganization(service, gone, owner);
    const added = await sdk.addDomain({
      client: owner.client,
      path: { org: gone },
      body: { domain: goneDomain },
    });
    expect(added.response.status).toBe(201);
    dns.records.set(added.data!.txtRecord.name, added.data!.txtRecord.value);
    const verified = await sdk.verifyDomain({
      client: owner.client,
      path: { org: gone, domain: goneDomain },
    });
    expect(verified.response.status).toBe(200);
    const provider = await sdk.setIdentityProvider({
      client: owner.client,
      path: { org: gone },
      body: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        enrollRole: 'member',
      },
    });
    expect(provider.response.status).toBe(200);
    const fay = `fay-${randomBytes(3).toString('hex')}`;
    idp.accounts.set(fay, { email: `${fay}@${goneDomain}`, email_verified: true });
    const signedIn = await orgSignIn(`${fay}@${goneDomain}`, fay);
    expect(signedIn.status).toBe(303);
    const identities = () =>
      sql(service, 'select provider, email_verified from identities where subject = $1', [fay]);
    expect(await identities()).toEqual([{ provider: expect.stringMatching(/^org:/), email_verified: true }]);

    const deleted = await sdk.deleteOrganization({ client: owner.client, path: { org: gone } });
    expect(deleted.response.status).toBe(204);
    expect(await identities()).toEqual([]);

    // Another organization invites that address: the deleted organization's word no longer opens it.
    const boss = await createTestUser(service, uniqueHandle('gboss'));
    const next = uniqueHandle('nextorg');
    await createTestOrganization(service, next, boss);
    const invitation = await sdk.createInvitation({
      client: boss.client,
      path: { org: next },
      body: { email: `${fay}@${goneDomain}`, role: 'member' },
    });
    expect(invitation.response.status).toBe(201);
    const page = await signedIn.jar.fetch(
      `${service.url}/invitations/answer?token=${encodeURIComponent(invitation.data!.acceptToken)}`,
    );
    expect(await page.text()).not.toContain('action="/invitations/answer"');
    const answer = await postForm(signedIn.jar, `${service.url}/invitations/answer`, {
      csrf: await pageFormToken(signedIn.jar),
      token: invitation.data!.acceptToken,
      answer: 'accept',
    });
    expect(answer.status).toBe(403);
  });
});
