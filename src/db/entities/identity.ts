import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, updatedAtColumn } from './common.ts';

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: idColumn(),
    displayName: p.string(),
    email: p.string().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IUser = InferEntity<typeof User>;

/** A way to sign in: one (provider, subject) pair from an identity provider, linked to a user. */
export const Identity = defineEntity({
  name: 'Identity',
  tableName: 'identities',
  properties: {
    id: idColumn(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    provider: p.string(),
    subject: p.string(),
    email: p.string().nullable(),
    emailVerified: p.boolean().default(false),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

/** A signed-in browser: the cookie holds a random value, this row its SHA-256. */
export const BrowserSession = defineEntity({
  name: 'BrowserSession',
  tableName: 'browser_sessions',
  properties: {
    id: idColumn(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    tokenHash: p.blob().hidden(),
    userAgent: p.string().nullable(),
    ip: p.string().nullable(),
    createdAt: createdAtColumn(),
    lastSeenAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
    endedAt: p.datetime().nullable(),
  },
});

/** A sign-in round trip to a provider in progress; its row is deleted when the callback uses it. */
export const SignInAttempt = defineEntity({
  name: 'SignInAttempt',
  tableName: 'sign_in_attempts',
  properties: {
    id: idColumn(),
    expiresAt: p.datetime(),
    createdAt: createdAtColumn(),
  },
});
