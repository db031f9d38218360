import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Enforcer, newEnforcer, newModelFromString, StringAdapter } from 'casbin';
import { isScope } from './scopes.ts';

export const ROLES = ['self', 'organization_admin', 'organization_member', 'public_account'] as const;
export type Role = (typeof ROLES)[number];

export interface PolicyRule {
  role: Role;
  object: string;
  action: string;
  effect: 'allow' | 'deny';
  line: number;
}

export class PolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyError';
  }
}

const DEFAULT_POLICY_DIR = join(import.meta.dirname, '..', '..', 'policies');

/**
 * Parses policy.csv strictly before Casbin sees it: Casbin would accept a typo'd role or scope as a rule
 * that simply never matches, which is how a policy edit silently locks people out (or in).
 */
export function parsePolicy(text: string, file = 'policy.csv'): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const seen = new Map<string, number>();
  // Any line ending an editor may leave (a file saved with old Mac endings would otherwise be one line).
  text.split(/\r\n|\r|\n/).forEach((raw, index) => {
    const line = index + 1;
    const content = raw.trim();
    if (content === '' || content.startsWith('#')) return;
    const fail = (why: string) => {
      throw new PolicyError(`${file}:${line}: ${why} (in "${content}")`);
    };
    const cells = content.split(',').map((c) => c.trim());
    if (cells[0] !== 'p') fail('a line must start with "p"');
    if (cells.length !== 5) fail('expected "p, role, object, action, allow|deny"');
    const [, role, object, action, effect] = cells as [string, string, string, string, string];
    if (!(ROLES as readonly string[]).includes(role))
      fail(`unknown role "${role}"; roles: ${ROLES.join(', ')}`);
    if (!isScope(`${object}:${action}`)) fail(`"${object}:${action}" is not a known scope`);
    if (effect !== 'allow' && effect !== 'deny') fail(`effect must be allow or deny, not "${effect}"`);
    // public_account is anyone signed in, on any public account: it reads, and an allow line for anything
    // else would let every user change every public account (a deny line changes nothing, so it may stay).
    if (role === 'public_account' && effect === 'allow' && action !== 'read')
      fail(
        `public_account may only read: allowing it ${object}:${action} would let anyone change every public account`,
      );
    const key = `${role},${object},${action},${effect}`;
    if (seen.has(key)) fail(`duplicate of line ${seen.get(key)}`);
    seen.set(key, line);
    rules.push({ role: role as Role, object, action, effect: effect as 'allow' | 'deny', line });
  });
  return rules;
}

export interface Policy {
  rules: PolicyRule[];
  /** Whether any of `roles` may do object:action. */
  allows(roles: Iterable<Role>, object: string, action: string): boolean;
}

/**
 * Loads and validates model.conf and policy.csv, then answers from a precomputed table: Casbin decides
 * every (role, object, action) once at start, so a request costs a Set lookup however long the policy is.
 * `needed` maps each scope the operations need to their operationIds: each must have a line.
 *
 * policy.csv is strictly (role, object, action, effect) with no patterns and no role links, so there is one
 * right reading of it: a role may do object:action when a line allows it and no line denies it. Casbin
 * accepts a model.conf that reads it otherwise without a word (a misspelt `r.rol` never matches and locks
 * everyone out; a matcher without `r.act == p.act` grants every action of an object), so each decision of
 * the model is held against that reading, and a model that disagrees stops the start naming model.conf.
 */
/** A file of POLICY_DIR; one that cannot be read stops the start naming the setting, not with a bare ENOENT. */
function readPolicyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new PolicyError(
      `${file} cannot be read (POLICY_DIR names the folder of model.conf and policy.csv): ${(error as Error).message}`,
    );
  }
}

export async function loadPolicy(
  dir = DEFAULT_POLICY_DIR,
  needed: ReadonlyMap<string, readonly string[]> = new Map(),
): Promise<Policy> {
  const modelFile = join(dir, 'model.conf');
  const policyFile = join(dir, 'policy.csv');
  const rules = parsePolicy(readPolicyFile(policyFile), policyFile);
  // A scope no line names is one nobody may use: a policy.csv cut short, or older than the operations,
  // would otherwise start a service that quietly refuses them. Refusing one to everyone is a deny line.
  for (const [scope, operations] of needed) {
    if (rules.some((r) => `${r.object}:${r.action}` === scope)) continue;
    throw new PolicyError(
      `${policyFile}: no line names ${scope}, which ${operations.join(', ')} in openapi.yaml ` +
        `need${operations.length === 1 ? 's' : ''}; add allow lines for the roles that may use it, or a deny line to refuse it to everyone`,
    );
  }
  const allowed = new Set<string>();
  const objectsActions = [...new Set(rules.map((r) => `${r.object}:${r.action}`))];
  const modelText = readPolicyFile(modelFile);
  try {
    const model = newModelFromString(modelText);
    const csv = rules.map((r) => `p, ${r.role}, ${r.object}, ${r.action}, ${r.effect}`).join('\n');
    const enforcer: Enforcer = await newEnforcer(model, new StringAdapter(csv));
    for (const role of ROLES) {
      for (const oa of objectsActions) {
        const [object, action] = oa.split(':') as [string, string];
        if (await enforcer.enforce(role, object, action)) allowed.add(`${role}|${object}|${action}`);
      }
    }
  } catch (error) {
    throw new PolicyError(`${modelFile}: ${(error as Error).message}`);
  }
  for (const role of ROLES) {
    for (const oa of objectsActions) {
      const [object, action] = oa.split(':') as [string, string];
      const lines = rules.filter((r) => r.role === role && r.object === object && r.action === action);
      const deny = lines.find((r) => r.effect === 'deny');
      const allow = lines.find((r) => r.effect === 'allow');
      const got = allowed.has(`${role}|${object}|${action}`);
      if (got === (allow !== undefined && deny === undefined)) continue;
      const written = deny
        ? `${policyFile}:${deny.line} denies`
        : allow
          ? `${policyFile}:${allow.line} allows`
          : `${policyFile} has no allow line for`;
      throw new PolicyError(
        `${modelFile}: the model ${got ? 'allows' : 'denies'} ${role} ${oa}, which ${written} it; ` +
          'a role may do object:action exactly when a line allows it and no line denies it',
      );
    }
  }
  return {
    rules,
    allows(roles, object, action) {
      for (const role of roles) if (allowed.has(`${role}|${object}|${action}`)) return true;
      return false;
    },
  };
}
