// Static assets of the server-rendered pages. The stylesheet is a file rather than an inline <style> so
// that the Content-Security-Policy needs no 'unsafe-inline' (src/lib/csp.ts). Its URL carries a hash of its
// content, so browsers may keep it for a year and still get a changed one at once.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Router } from 'express';

const STYLESHEET = readFileSync(new URL('./app.css', import.meta.url));
const VERSION = createHash('sha256').update(STYLESHEET).digest('base64url').slice(0, 16);

const STYLESHEET_PATH = '/assets/app.css';
/** What pages link to: the path with the content's version, so a change is a new URL. */
export const STYLESHEET_URL = `${STYLESHEET_PATH}?v=${VERSION}`;

export function assetRoutes(): Router {
  const router = Router();
  router.get(STYLESHEET_PATH, (_req, res) => {
    res.type('text/css').set('Cache-Control', 'public, max-age=31536000, immutable').send(STYLESHEET);
  });
  return router;
}
