// Expired oidc-provider rows (codes, tokens, sessions, interactions) are useless once expired; oidc-provider
// never reads them (it checks `exp` itself), so a periodic sweep keeps the table small. Every instance
// sweeps; the work is idempotent, in small batches so no statement holds many locks for long.
import type { Orm } from '../db/orm.ts';
import { deleteExpiredSignInRows } from '../identity/sessions.ts';
import type { Logger } from '../lib/logger.ts';

const BATCH = 1000;
const INTERVAL_MS = 10 * 60_000;

/** Deletes expired rows in batches; returns how many were removed. */
export async function deleteExpiredOidcRows(orm: Orm): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await orm.em.getConnection().execute<{ affectedRows: number }>(
      `delete from oidc_models where ctid in (
         select ctid from oidc_models where expires_at < now() limit ${BATCH})`,
      [],
      'run',
    );
    total += result.affectedRows;
    if (result.affectedRows < BATCH) return total;
  }
}

/** Starts the periodic sweep (first run after one interval, with jitter so instances spread out). */
export function startCleanup(orm: Orm, logger: Logger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(run, INTERVAL_MS + Math.floor(Math.random() * 60_000));
    timer.unref();
  };
  const run = async () => {
    try {
      const removed = (await deleteExpiredOidcRows(orm)) + (await deleteExpiredSignInRows(orm));
      if (removed > 0) logger.info({ removed }, 'removed expired OAuth and sign-in rows');
    } catch (error) {
      logger.warn({ err: error }, 'OAuth cleanup failed');
    }
    schedule();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
