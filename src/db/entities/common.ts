import { p } from '@mikro-orm/core';
import { uuidv7 } from '../../lib/ids.ts';

// Columns every table has. Defaults come from the database too; these make the ORM set them itself.
export const idColumn = () =>
  p
    .uuid()
    .primary()
    .onCreate(() => uuidv7());
export const createdAtColumn = () => p.datetime().onCreate(() => new Date());
export const updatedAtColumn = () =>
  p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date());
