import { LockMode } from '@mikro-orm/core';
import { isScope, type Scope } from '../../authz/scopes.ts';
import { scopesBeyondCeiling } from '../../authz/token-ceiling.ts';
import { isoTimestamp } from '../../db/columns.ts';
import { AccountToken } from '../../db/entities/index.ts';
import {
  childTokenExpiry,
  issueAccountToken,
  serializeToken,
  TOKEN_LIMITS,
  type TokenRow,
} from '../../domain/tokens.ts';
import { keysetPages, page, pageRequest } from '../pagination.ts';
import type { Handlers } from '../pipeline.ts';
import { Problem, problems } from '../problem.ts';
import { SHOWN_ONCE_HEADERS } from '../shown-once.ts';
import { callersAccount } from './user.ts';

/**
 * A page of an account's tokens with each creator's handle (their personal account's), in one statement
 * and as plain rows: no entity is built for a list that only reads.
 */
const tokenPage = keysetPages(
  `select t.id, t.name, t.description, t.scopes, t.token_prefix as "tokenPrefix",
          ${isoTimestamp('t.expires_at')} as "expiresAt", ${isoTimestamp('t.last_used_at')} as "lastUsedAt",
          ${isoTimestamp('t.revoked_at')} as "revokedAt", ${isoTimestamp('t.created_at')} as "createdAt",
          coalesce(creator.handle, '') as "createdBy"
     from account_tokens t
     left join accounts creator on creator.user_id = t.created_by_id
    where t.account_id = ?`,
  't.id',
);

export const tokenHandlers = {
  async listTokens(op) {
    const request = pageRequest(op.query, 'tokens', op.target!.accountId);
    const { statement, params } = tokenPage(op.target!.accountId, request);
    const rows = await op.sql<(TokenRow & { createdBy: string })[]>(statement, params);
    const now = new Date();
    return {
      status: 200,
      body: page(rows, request, (t) => serializeToken(t, op.target!.handle, t.createdBy, now)),
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
    const creator = await callersAccount(op);
    return {
      status: 201,
      headers: SHOWN_ONCE_HEADERS,
      body: { ...serializeToken(row, target.account.handle, creator.handle), token: secret },
    };
  },

  async revokeToken(op) {
    // Locked, so a second revoke racing this one sees it revoked and records nothing.
    const token = await op.em.findOne(
      AccountToken,
      { id: op.params.token!, account: op.target!.accountId },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
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
