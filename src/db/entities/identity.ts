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
export type IIdentity = InferEntity<typeof Identity>;
