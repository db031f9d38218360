import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCatalogue } from '../src/api/catalogue.ts';
import { loadPolicy, PolicyError, parsePolicy, ROLES, type Role } from '../src/authz/policy.ts';
import { ALL_SCOPES } from '../src/authz/scopes.ts';
import { startTestService } from '../test/support/service.ts';

// The policy as a policy author reads it: one row per scope, one column per role. Editing policy.csv
// without editing this table (or the reverse) fails here, so every change to who-may-do-what is deliberate.
const S = 'self';
const A = 'organization_admin';
const M = 'organization_member';
const P = 'public_account';
const EXPECTED: Record<string, Role[]> = {
  'user:read': [S],
  'user:write': [S],
  'account:read': [S, A, M, P],
  'organization:read': [S, A, M, P],
  'organization:write': [S, A],
  'organization:delete': [A],
  'organization:admin': [A],
  'members:read': [A, M],
  'members:write': [A],
  'project:read': [S, A, M, P],
  'project:write': [S, A, M],
  'project:admin': [S, A],
  'project:delete': [S, A],
  'voice:read': [S, A, M, P],
  'voice:write': [S, A],
  'voice:admin': [S, A],
  'glossary:read': [S, A, M],
  'glossary:write': [S, A],
  'glossary:admin': [S, A],
  'model:read': [S, A, M],
  'model:write': [S, A],
  'token:read': [S, A],
  'token:write': [S, A],
  'apps:read': [S],
  'apps:write': [S],
  'audit:read': [S, A],
};

describe('policies/policy.csv', async () => {
  const policy = await loadPolicy();

  it('covers every known scope in the expected table', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...ALL_SCOPES].sort());
  });

  const cases = ALL_SCOPES.flatMap((scope) =>
    ROLES.map((role) => ({ scope, role, allowed: EXPECTED[scope]!.includes(role) })),
  );
  it.each(cases)('$role → $scope: $allowed', ({ scope, role, allowed }) => {
    const [object, action] = scope.split(':') as [string, string];
    expect(policy.allows([role], object, action)).toBe(allowed);
  });

  it('lets nobody write through public_account', () => {
    const writes = policy.rules.filter(
      (r) => r.role === 'public_account' && r.action !== 'read' && r.effect === 'allow',
    );
    expect(writes).toEqual([]);
  });

  it('has policy lines for every scope that openapi.yaml names', async () => {
    const named = new Set([...(await loadCatalogue()).operations.values()].map((op) => op.scope));
    const covered = new Set(policy.rules.map((r) => `${r.object}:${r.action}`));
    expect([...named].filter((scope) => !covered.has(scope))).toEqual([]);
  });
});

/** A policy folder with the given policy.csv, and the real model.conf unless another is given. */
function policyDir(csv: string, model?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'l10n-policy-'));
  if (model === undefined) copyFileSync(join(import.meta.dirname, 'model.conf'), join(dir, 'model.conf'));
  else writeFileSync(join(dir, 'model.conf'), model);
  writeFileSync(join(dir, 'policy.csv'), csv);
  return dir;
}

const realModel = readFileSync(join(import.meta.dirname, 'model.conf'), 'utf8');
const realPolicy = readFileSync(join(import.meta.dirname, 'policy.csv'), 'utf8');

describe('policy parsing', () => {
  it('names the file and line of a malformed rule', () => {
    const text = 'p, self, project, read, allow\n\np, selff, project, read, allow\n';
    expect(() => parsePolicy(text, 'policies/policy.csv')).toThrow(
      new PolicyError(
        'policies/policy.csv:3: unknown role "selff"; roles: self, organization_admin, organization_member, public_account (in "p, selff, project, read, allow")',
      ),
    );
  });

  it.each([
    ['p, self, project, reed, allow', /"project:reed" is not a known scope/],
    ['p, self, project, read', /expected "p, role, object, action, allow\|deny"/],
    ['p, self, project, read, maybe', /effect must be allow or deny/],
    ['g, self, admin', /must start with "p"/],
    ['p, self, project, read, allow\np, self, project, read, allow', /:2: duplicate of line 1/],
    ['p, public_account, project, write, allow', /public_account may only read: allowing it project:write/],
    ['p, public_account, organization, admin, allow', /public_account may only read/],
    // Old Mac line endings: still one rule per line, so the second line is the duplicate.
    ['p, self, project, read, allow\rp, self, project, read, allow', /:2: duplicate of line 1/],
  ])('refuses %j', (text, message) => {
    expect(() => parsePolicy(text)).toThrow(message);
  });

  it('names POLICY_DIR when a file of it cannot be read', async () => {
    const dir = policyDir(realPolicy);
    const missing = join(dir, 'nowhere');
    await expect(loadPolicy(missing)).rejects.toThrow(
      new RegExp(`^${join(missing, 'policy.csv')} cannot be read \\(POLICY_DIR names`),
    );
  });

  it('honours a deny line over an allow line', async () => {
    const dir = policyDir(
      'p, organization_member, project, write, allow\np, organization_member, project, write, deny\n',
    );
    const denied = await loadPolicy(dir);
    expect(denied.allows(['organization_member'], 'project', 'write')).toBe(false);
  });

  // model.conf is Casbin's, and Casbin takes most slips there without a word: a misspelt field never
  // matches (everyone is locked out), a matcher without the action grants every action of an object, an
  // effect or a policy definition without deny ignores deny lines. Other slips fail on its first decision.
  const denyLine = `${realPolicy}\np, self, user, read, deny\n`; // line 70
  it.each([
    [
      'a misspelt field in the matcher',
      realModel.replace('r.role == p.role', 'r.rol == p.role'),
      realPolicy,
      'the model denies self user:read, which {dir}/policy.csv:6 allows it',
    ],
    [
      'a matcher without the action',
      realModel.replace(' && r.act == p.act', ''),
      realPolicy,
      'the model allows self organization:delete, which {dir}/policy.csv has no allow line for it',
    ],
    [
      'an effect without deny',
      realModel.replace(' && !some(where (p.eft == deny))', ''),
      denyLine,
      'the model allows self user:read, which {dir}/policy.csv:70 denies it',
    ],
    [
      'a policy definition without the effect',
      realModel.replace('p = role, obj, act, eft', 'p = role, obj, act'),
      denyLine,
      'the model allows self user:read, which {dir}/policy.csv:70 denies it',
    ],
    [
      'an effect Casbin does not know',
      realModel.replace('p.eft == allow', 'p.eft == alow'),
      realPolicy,
      'unsupported effect',
    ],
    [
      'a request with a field too many',
      realModel.replace('r = role, obj, act', 'r = role, obj, act, extra'),
      realPolicy,
      'invalid request size',
    ],
  ])('refuses a model.conf with %s, naming the file', async (_, model, csv, message) => {
    const dir = policyDir(csv, model);
    const loading = loadPolicy(dir);
    await expect(loading).rejects.toThrow(PolicyError);
    await expect(loading).rejects.toThrow(`${join(dir, 'model.conf')}: ${message.replace('{dir}', dir)}`);
  });

  it('stops the service at start on a policy that leaves out a scope openapi.yaml names', async () => {
    const dir = policyDir(
      realPolicy
        .split('\n')
        .filter((line) => !/, glossary, read, /.test(line))
        .join('\n'),
    );
    await expect(startTestService({ POLICY_DIR: dir })).rejects.toThrow(
      `${join(dir, 'policy.csv')}: no line names glossary:read, which getGlossary, searchGlossaryEntries, ` +
        'listGlossaryVersions, getGlossarySettings in openapi.yaml need; add allow lines for the roles that may use it, or a deny line to refuse it to everyone',
    );
    // Refusing it to everyone is said with a deny line.
    const denied = await loadPolicy(
      policyDir(`${readFileSync(join(dir, 'policy.csv'), 'utf8')}\np, self, glossary, read, deny\n`),
      new Map([['glossary:read', ['getGlossary']]]),
    );
    expect(denied.allows(['self', 'organization_admin'], 'glossary', 'read')).toBe(false);
  });

  it('stops the service at start on a malformed policy, naming file and line', async () => {
    const dir = policyDir('p, self, project, read, allow\np, self, projects, read, allow\n');
    await expect(startTestService({ POLICY_DIR: dir })).rejects.toThrow(
      `${join(dir, 'policy.csv')}:2: "projects:read" is not a known scope`,
    );
  });
});
