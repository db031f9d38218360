// Browser sessions: who is signed in to this service in a browser. Stored in PostgreSQL (any instance
// serves any request); the cookie carries a random value and the row only its SHA-256, so a database
// leak hands out no sessions. Pages use this small API: current(), require(), start(), end(), list().
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { parseCookie } from 'cookie';
import type { Request, Response } from 'express';
import { BrowserSession } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { type AuditRecord, recordAudit } from '../domain/audit.ts';
import { personalAccount } from '../domain/users.ts';

const SESSION_COOKIE = 'l10n_session';
/** A session nobody used for this long is over. */
const SESSION_IDLE_SECONDS = 3 * 24 * 60 * 60;
/** However much it is used, a session ends this long after sign-in. */
const SESSION_ABSOLUTE_SECONDS = 14 * 24 * 60 * 60;
/** last_seen_at is written at most this often, so reading a page is not a write each time. */
const TOUCH_INTERVAL_MS = 5 * 60 * 1000;

export interface SignedIn {
  userId: string;
  /** The session row's id (random, never shown to another user): what CSRF tokens of forms are bound to. */
  sessionId: string;
  /** When the person signed in to this session (a client asking for a fresh sign-in compares with it). */
  signedInAt: Date;
}

interface SessionInfo {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  userAgent: string | null;
  ip: string | null;
  current: boolean;
}

export interface Sessions {
  /** The signed-in person of this request, if its cookie names a live session. */
  current(req: IncomingMessage): Promise<SignedIn | undefined>;
  /**
   * The signed-in person, or undefined after redirecting the browser to the sign-in page, which brings it
   * back to `returnTo` (a path of ours).
   */
  require(req: Request, res: Response, returnTo?: string): Promise<SignedIn | undefined>;
  /** Signs a person in: a new session (and cookie value) every time; the browser's previous one ends. */
  start(req: Request, res: Response, userId: string): Promise<SignedIn>;
  /** Signs this browser out. */
  end(req: Request, res: Response): Promise<void>;
  /** The person's live sessions, newest first; `current` marks this browser's. */
  list(userId: string, currentId?: string): Promise<SessionInfo[]>;
  /**
   * Ends one of the person's sessions, recorded in their audit log (`session.end`) with the change; false
   * when there is no such live session of theirs.
   */
  endOne(userId: string, sessionId: string, meta: AuditRecord['meta']): Promise<boolean>;
}

const hash = (value: string) => createHash('sha256').update(value).digest();

/** One cookie of the request (the first, if the browser sent the name twice), parsed by the `cookie` package. */
export function readCookie(req: IncomingMessage, name: string): string | undefined {
  return parseCookie(req.headers.cookie ?? '')[name];
}

export function createSessions(orm: Orm, baseUrl: string): Sessions {
  const cookieOptions = {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: baseUrl.startsWith('https:'),
  } as const;
  // One lookup per request, however many parts of the request ask.
  const memo = new WeakMap<IncomingMessage, Promise<SignedIn | undefined>>();

  const live = (now: Date) => ({
    endedAt: null,
    expiresAt: { $gt: now },
    lastSeenAt: { $gt: new Date(now.getTime() - SESSION_IDLE_SECONDS * 1000) },
  });

  async function lookup(req: IncomingMessage): Promise<SignedIn | undefined> {
    const value = readCookie(req, SESSION_COOKIE);
    if (!value || !/^[\w-]{43}$/.test(value)) return undefined;
    const em = orm.em.fork();
    const now = new Date();
    const row = await em.findOne(BrowserSession, { tokenHash: hash(value), ...live(now) });
    if (!row) return undefined;
    if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_INTERVAL_MS)
      await em.nativeUpdate(BrowserSession, { id: row.id }, { lastSeenAt: now });
    return { userId: row.user.id, sessionId: row.id, signedInAt: row.createdAt };
  }

  const sessions: Sessions = {
    current(req) {
      let found = memo.get(req);
      if (!found) {
        found = lookup(req);
        memo.set(req, found);
      }
      return found;
    },

    async require(req, res, returnTo = req.originalUrl) {
      const who = await sessions.current(req);
      if (who) return who;
      res.redirect(303, `/signin?next=${encodeURIComponent(returnTo)}`);
      return undefined;
    },

    async start(req, res, userId) {
      await sessions.end(req, res);
      const value = randomBytes(32).toString('base64url');
      const em = orm.em.fork();
      const now = new Date();
      const row = em.create(BrowserSession, {
        user: userId,
        tokenHash: hash(value),
        userAgent: req.get('user-agent')?.slice(0, 300) ?? null,
        ip: req.ip ?? null,
        lastSeenAt: now,
        expiresAt: new Date(now.getTime() + SESSION_ABSOLUTE_SECONDS * 1000),
        endedAt: null,
      });
      await em.flush();
      res.cookie(SESSION_COOKIE, value, { ...cookieOptions, maxAge: SESSION_ABSOLUTE_SECONDS * 1000 });
      const who = { userId, sessionId: row.id, signedInAt: row.createdAt };
      memo.set(req, Promise.resolve(who));
      return who;
    },

    async end(req, res) {
      const value = readCookie(req, SESSION_COOKIE);
      if (value)
        await orm.em
          .fork()
          .nativeUpdate(BrowserSession, { tokenHash: hash(value), endedAt: null }, { endedAt: new Date() });
      res.clearCookie(SESSION_COOKIE, cookieOptions);
      memo.set(req, Promise.resolve(undefined));
    },

    async list(userId, currentId) {
      const rows = await orm.em
        .fork()
        .find(BrowserSession, { user: userId, ...live(new Date()) }, { orderBy: { lastSeenAt: 'desc' } });
      return rows.map((row) => ({
        id: row.id,
        createdAt: row.createdAt,
        lastSeenAt: row.lastSeenAt,
        expiresAt: row.expiresAt,
        userAgent: row.userAgent ?? null,
        ip: row.ip ?? null,
        current: row.id === currentId,
      }));
    },

    async endOne(userId, sessionId, meta) {
      return orm.em.fork().transactional(async (em) => {
        const ended = await em.nativeUpdate(
          BrowserSession,
          { id: sessionId, user: userId, endedAt: null },
          { endedAt: new Date() },
        );
        if (ended === 0) return false;
        recordAudit(
          em,
          { userId },
          {
            action: 'session.end',
            resourceType: 'browser_session',
            resourceId: sessionId,
            account: await personalAccount(em, userId),
            door: 'web',
            meta,
          },
        );
        return true;
      });
    },
  };
  return sessions;
}

/**
 * Sweeps what can no longer be used: sign-in attempts past their expiry, and sessions that ended or
 * expired more than a day ago (kept that long so a just-ended session still shows as such in logs).
 */
export async function deleteExpiredSignInRows(orm: Orm): Promise<number> {
  const connection = orm.em.getConnection();
  const attempts = await connection.execute<{ affectedRows: number }>(
    'delete from sign_in_attempts where expires_at < now()',
    [],
    'run',
  );
  const sessions = await connection.execute<{ affectedRows: number }>(
    `delete from browser_sessions
      where coalesce(ended_at, expires_at) < now() - interval '1 day'
         or last_seen_at < now() - interval '1 day' - make_interval(secs => ${SESSION_IDLE_SECONDS})`,
    [],
    'run',
  );
  return attempts.affectedRows + sessions.affectedRows;
}
