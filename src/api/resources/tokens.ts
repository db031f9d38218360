import { isScope, type Scope } from '../../authz/scopes.ts';
import { scopesBeyondCeiling } from '../../authz/token-ceiling.ts';
import { Account, AccountToken } from '../../db/entities/index.ts';
import { childTokenExpiry, issueAccountToken, serializeToken, TOKEN_LIMITS } from '../../domain/tokens.ts';
import { userHandles } from '../../domain/users.ts';
import { findAccountPage } from '../account-resources.ts';
import type { Handlers } from '../pipeline.ts';
import { Problem, problems } from '../problem.ts';

export const tokenHandlers = {
  async listTokens(op) {
    const found = await findAccountPage(op, AccountToken);
    // Creators are named by their personal account's handle, fetched for the whole page at once.
    const handleOf = await userHandles(
      op.em,
      found.rows.map((t) => t.createdBy.id),
    );
    const now = new Date();
    return {
      status: 200,
      body: found.body((t) => serializeToken(t, op.target!.handle, handleOf.get(t.createdBy.id) ?? '', now)),
    };
  },

  async createToken(op) {
    const target = op.target!;
    const requested: string[] = op.body.scopes;
    // openapi.yaml lists the scopes as an enum; this keeps the handler safe if the two ever drift.
    const unknown = requested.findIndex((s) => !isScope(s));
    if (unknown >= 0)
      throw problems.badRequest(`"${requested[unknown]}" is not a scope.`, `/body/scopes/${unknown}`);
    const scopes = requested as Scope[];

    const beyond = await scopesBeyondCeiling(op.em, op.policy, op.caller, target, scopes);
    if (beyond.length > 0) {
      throw new Problem(
        403,
        'forbidden',
        'Forbidden',
        `A token cannot carry more than its creator holds; you do not hold ${beyond.join(', ')} on "${target.account.handle}".`,
        {
          errors: beyond.map((scope) => ({
            pointer: '/body/scopes',
            message: `${scope} is beyond what your token and your role allow.`,
          })),
        },
      );
    }

    const lifetime = childTokenExpiry(op.body.expiresInDays, op.caller.expiresAt);
    if ('refused' in lifetime) {
      const { maxDays, parentExpiresAt } = lifetime.refused;
      throw problems.badRequest(
        `A token cannot outlive the credential that creates it, which expires at ${parentExpiresAt.toISOString()}; ` +
          (maxDays >= TOKEN_LIMITS.minLifetimeDays
            ? `ask for expiresInDays ${maxDays} or less, or leave it out.`
            : 'leave expiresInDays out to get a token that expires with it.'),
        '/body/expiresInDays',
      );
    }
    const { row, secret } = issueAccountToken(op.em, {
      account: target.account,
      createdById: op.caller.userId,
      name: op.body.name,
      description: op.body.description ?? '',
      scopes,
      expiresAt: lifetime.expiresAt,
      // A token an OAuth app creates (directly, or through a token it created) dies with the app's grant.
      oauthGrantId: op.caller.oauthGrantId,
    });
    await op.em.flush();
    op.audit('token.create', 'account_token', row.id, {
      name: row.name,
      scopes: row.scopes,
      tokenPrefix: row.tokenPrefix,
      expiresAt: row.expiresAt?.toISOString() ?? null,
    });
    const creator = await op.em.findOneOrFail(Account, { user: op.caller.userId });
    return {
      status: 201,
      body: { ...serializeToken(row, target.account.handle, creator.handle), token: secret },
    };
  },

  async revokeToken(op) {
    const token = await op.em.findOne(AccountToken, { id: op.params.token!, account: op.target!.accountId });
    if (!token) throw problems.notFound(`No token ${op.params.token} in "${op.target!.handle}".`);
    // Idempotent: a second revoke changes nothing, so the first revocation time stays the record.
    if (!token.revokedAt) {
      token.revokedAt = new Date();
      op.audit('token.revoke', 'account_token', token.id, {
        name: token.name,
        tokenPrefix: token.tokenPrefix,
      });
      await op.em.flush();
    }
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
