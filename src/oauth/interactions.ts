// oidc-provider interactions under /oauth/interaction/:uid: the (development) sign-in and the consent
// page. oidc-provider decides which prompt is due; these routes only render it and record the answer.
import { setTimeout } from 'node:timers/promises';
import express, { type Request, type Response, Router } from 'express';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import type { ServiceContext } from '../context.ts';
import { Account } from '../db/entities/index.ts';
import { recordAudit } from '../domain/audit.ts';
import { personalAccount } from '../domain/users.ts';
import { devSignInUser } from '../identity/dev-users.ts';
import { configuredProviders } from '../identity/providers.ts';
import type { Sessions } from '../identity/sessions.ts';
import { allowFormActionTo } from '../lib/csp.ts';
import { requireUtf8Form } from '../lib/utf8-body.ts';
import { consentPage, errorPage, loginPage } from '../web/authorization-pages.ts';
import type { Csrf } from '../web/csrf.ts';
import { isOrgSignInError } from '../web/sign-in/pages.ts';
import { claimInteractionAnswer } from './adapter.ts';
import { INTERACTION_PATH } from './provider.ts';
import { endAuthorizationSession, endSessionOfSomeoneElse } from './session.ts';

const CSRF_PURPOSE = 'interaction';
const LOGIN_LIST_LIMIT = 50;

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

export function interactionRoutes(
  ctx: ServiceContext,
  provider: Provider,
  csrf: Csrf,
  sessions: Sessions,
): Router {
  const router = Router();
  const providers = configuredProviders(ctx.config).map(({ id, label }) => ({ id, label }));
  const form = express.urlencoded({ extended: false, limit: '8kb', verify: requireUtf8Form });

  /** The interaction the browser's cookie names, if it is the one in the URL; renders an error otherwise. */
  async function load(req: Request, res: Response): Promise<Interaction | undefined> {
    try {
      const interaction = await provider.interactionDetails(req, res);
      if (interaction.uid === req.params.uid) return interaction;
    } catch {
      // fall through: missing or expired interaction cookie
    }
    // Back after a step was answered lands here too (the interaction is used up): no cached copy of it.
    res.set('Cache-Control', 'no-store').status(400).type('html').send(errorPage('step_over'));
    return undefined;
  }

  /** Loads the interaction and checks the CSRF token of a POST against it. */
  async function loadForPost(req: Request, res: Response): Promise<Interaction | undefined> {
    const interaction = await load(req, res);
    if (!interaction) return undefined;
    if (!csrf.verify(CSRF_PURPOSE, interaction.jti, req.body?.csrf)) {
      res.status(403).type('html').send(errorPage('form_expired'));
      return undefined;
    }
    return interaction;
  }

  async function clientOf(interaction: Interaction) {
    const clientId = String(interaction.params.client_id);
    const client = await provider.Client.find(clientId);
    return { name: client?.clientName ?? clientId, isPublic: client?.tokenEndpointAuthMethod === 'none' };
  }

  async function clientName(interaction: Interaction): Promise<string> {
    return (await clientOf(interaction)).name;
  }

  /** Ends the sign-in step as `userId`: whoever is signed in to this service now is who authorizes. */
  async function finishLogin(req: Request, res: Response, interaction: Interaction, userId: string) {
    await endSessionOfSomeoneElse(provider, req, res, interaction, userId);
    const result: InteractionResults = { login: { accountId: userId } };
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  }

  async function renderLogin(req: Request, res: Response, interaction: Interaction, error?: string) {
    // Signed in to this service already (a browser session): no second sign-in, straight on to consent.
    // Unless the client asked for a fresh one (prompt=login): the person at the keyboard may not be who
    // signed in (a shared computer), so only a sign-in made since this authorization began counts, and the
    // page offers every way to sign in. The interaction knows when it began to the second: a sign-in in that
    // same second is taken as older (no person signs in that fast). (`max_age` would ask the same, but
    // oidc-provider takes it only with the openid scope, which this server does not offer.)
    const who = error ? undefined : await sessions.current(req);
    const freshAsked = interaction.prompt.reasons.includes('login_prompt');
    const signedInSince = who !== undefined && who.signedInAt.getTime() >= (interaction.iat! + 1) * 1000;
    if (who && (!freshAsked || signedInSince)) return finishLogin(req, res, interaction, who.userId);
    const em = ctx.orm.em.fork();
    const accounts = ctx.config.devLogin
      ? await em.find(Account, { kind: 'user' }, { orderBy: { handle: 'asc' }, limit: LOGIN_LIST_LIMIT })
      : [];
    const base = `${INTERACTION_PATH}/${interaction.uid}`;
    allowFormActionTo(res, String(interaction.params.redirect_uri));
    res
      .status(error ? 400 : 200)
      .type('html')
      .send(
        loginPage({
          action: `${base}/login`,
          abortAction: `${base}/abort`,
          csrf: csrf.token(CSRF_PURPOSE, interaction.jti),
          clientName: await clientName(interaction),
          handles: accounts.map((a) => a.handle),
          devLogin: ctx.config.devLogin,
          providers,
          next: base,
          error,
          handleValue: error ? String(req.body?.handle ?? '') : undefined,
          // Sent back by "Sign in with your organization" (src/web/sign-in/routes.ts).
          org: isOrgSignInError(req.query.org_error)
            ? {
                email: typeof req.query.email === 'string' ? req.query.email : '',
                error: req.query.org_error,
              }
            : undefined,
        }),
      );
  }

  async function renderConsent(res: Response, interaction: Interaction) {
    const details = interaction.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const requested = new Set(Object.values(details.missingResourceScopes ?? {}).flat());
    const grant = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
    const alreadyGranted = new Set(
      Object.values(grant?.resources ?? {}).flatMap((s) => (typeof s === 'string' ? s.split(' ') : [])),
    );
    // Asked again for nothing new: a public client approved before (see the policy in provider.ts), or a
    // client that sent prompt=consent. Show what this authorization will carry, and for a public client
    // say why the question comes back.
    const nothingNew = requested.size === 0;
    if (nothingNew) {
      for (const scope of String(interaction.params.scope ?? '').split(' ')) if (scope) requested.add(scope);
    }
    const client = await clientOf(interaction);
    const account = await ctx.orm.em
      .fork()
      .findOne(Account, { user: { id: String(interaction.session?.accountId) }, kind: 'user' });
    allowFormActionTo(res, String(interaction.params.redirect_uri));
    res.type('html').send(
      consentPage({
        action: `${INTERACTION_PATH}/${interaction.uid}/consent`,
        switchAction: `${INTERACTION_PATH}/${interaction.uid}/switch`,
        csrf: csrf.token(CSRF_PURPOSE, interaction.jti),
        clientName: client.name,
        clientId: String(interaction.params.client_id),
        ...describeRedirect(String(interaction.params.redirect_uri)),
        userHandle: account?.handle ?? 'unknown',
        requested: [...requested],
        alreadyGranted: nothingNew ? [] : [...alreadyGranted].filter((s) => !requested.has(s)),
        reconfirm: nothingNew && client.isPublic,
      }),
    );
  }

  router.get(`${INTERACTION_PATH}/:uid`, async (req, res) => {
    const interaction = await load(req, res);
    if (!interaction) return;
    res.set('Cache-Control', 'no-store');
    if (interaction.prompt.name === 'login') return renderLogin(req, res, interaction);
    // Let go of its session by "Not you?" (another tab of this step, or its redirect not followed): the
    // authorization resumes from there and asks who is authorizing.
    if (interaction.prompt.name === 'consent' && !interaction.session?.accountId)
      return res.redirect(303, interaction.returnTo);
    if (interaction.prompt.name === 'consent') return renderConsent(res, interaction);
    res.status(400).type('html').send(errorPage('step_over', 'unsupported step'));
  });

  router.post(`${INTERACTION_PATH}/:uid/login`, form, async (req, res) => {
    const interaction = await loadForPost(req, res);
    if (!interaction) return;
    if (!ctx.config.devLogin || interaction.prompt.name !== 'login') {
      res.status(403).type('html').send(errorPage('access_denied', 'sign-in is not available here'));
      return;
    }
    const handle = String(req.body.handle ?? '').trim();
    const outcome = await devSignInUser(ctx, handle, req.body.create === '1');
    if ('error' in outcome) return renderLogin(req, res, interaction, outcome.error);
    await sessions.start(req, res, outcome.userId);
    await finishLogin(req, res, interaction, outcome.userId);
  });

  router.post(`${INTERACTION_PATH}/:uid/consent`, form, async (req, res) => {
    const interaction = await loadForPost(req, res);
    if (!interaction) return;
    if (interaction.prompt.name !== 'consent') {
      res.status(400).type('html').send(errorPage('step_over', 'nothing to approve'));
      return;
    }
    // Nobody is signed in to approve as since "Not you?": on to the sign-in step, approving nothing.
    if (!interaction.session?.accountId) return res.redirect(303, interaction.returnTo);
    await answerOnce(req, res, interaction, async (current) => {
      if (req.body.decision !== 'approve') {
        await provider.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'The user denied the request.' },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const grantId = await recordConsent(provider, current);
      await auditConsent(req, current, grantId);
      await provider.interactionFinished(
        req,
        res,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
    });
  });

  // "Not you?" on the consent page: someone else is at this browser (a shared computer). The person named
  // there is signed out as by Sign out, and the authorization, let go of that session as when another
  // person signs in (session.ts), resumes and asks who is authorizing: the sign-in step, then this page
  // again for whoever signs in. Nothing is approved or denied on the way; the app waits as it would.
  router.post(`${INTERACTION_PATH}/:uid/switch`, form, async (req, res) => {
    const interaction = await loadForPost(req, res);
    if (!interaction) return;
    if (interaction.prompt.name !== 'consent' || interaction.result) {
      res.status(400).type('html').send(errorPage('step_over', 'nothing to approve'));
      return;
    }
    await sessions.end(req, res);
    await endAuthorizationSession(provider, req, res);
    interaction.session = undefined;
    await interaction.persist();
    res.redirect(303, interaction.returnTo);
  });

  /**
   * A consent page is answered once: Approve pressed twice, or Approve and then Deny, sends two POSTs. The
   * first to claim the interaction (claimInteractionAnswer) answers it; any other waits for that answer and
   * then leads the browser on as it does, recording nothing and overriding nothing. Waiting is polling,
   * not a lock held in the database, so no connection of the pool is kept meanwhile.
   */
  async function answerOnce(
    req: Request,
    res: Response,
    interaction: Interaction,
    answer: (current: Interaction) => Promise<void>,
  ) {
    const claimed = await claimInteractionAnswer(ctx.orm, interaction.uid);
    for (let waited = 0; ; waited += ANSWER_POLL_MS) {
      // Gone when the browser already went on with the first answer: load() has sent "This step is over".
      const current = await load(req, res);
      if (!current) return;
      const result = current.result as InteractionResults | undefined;
      if (result && ('consent' in result || 'error' in result)) return res.redirect(303, current.returnTo);
      if (claimed) return answer(current);
      // The other request is still answering (or died doing so): the authorization decides from here.
      if (waited >= ANSWER_WAIT_MS) return res.redirect(303, current.returnTo);
      await setTimeout(ANSWER_POLL_MS);
    }
  }

  /**
   * An approval is in the person's audit log (`app.authorize`, as its end is, `app.disconnect`): what an app
   * was allowed, and when. oidc-provider keeps the grant in its own storage (the adapter's statement), so the
   * event is a write of its own, made once the grant is saved.
   */
  async function auditConsent(req: Request, interaction: Interaction, grantId: string) {
    const userId = interaction.session!.accountId;
    const details = interaction.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const em = ctx.orm.em.fork();
    recordAudit(
      em,
      { userId },
      {
        action: 'app.authorize',
        resourceType: 'oauth_client',
        resourceId: String(interaction.params.client_id),
        account: await personalAccount(em, userId),
        details: {
          grantId,
          scopes: [...new Set(Object.values(details.missingResourceScopes ?? {}).flat())].sort(),
          resources: Object.keys(details.missingResourceScopes ?? {}),
        },
        door: 'web',
        meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
      },
    );
    await em.flush();
  }

  router.post(`${INTERACTION_PATH}/:uid/abort`, form, async (req, res) => {
    const interaction = await loadForPost(req, res);
    if (!interaction) return;
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'The user cancelled the sign-in.' },
      { mergeWithLastSubmission: false },
    );
  });

  return router;
}

/** How long a second answer of one consent page waits for the first, and how often it looks. */
const ANSWER_WAIT_MS = 5_000;
const ANSWER_POLL_MS = 100;

/** Adds what the consent prompt said was missing to the user's grant for this client (or a new one). */
async function recordConsent(provider: Provider, interaction: Interaction): Promise<string> {
  const details = interaction.prompt.details as {
    missingOIDCScope?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
  const grant =
    existing ??
    new provider.Grant({
      accountId: interaction.session!.accountId,
      clientId: String(interaction.params.client_id),
    });
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  return grant.save();
}

/** What the user will be sent back to, shortened to what matters: the host, or the app's scheme. */
function describeRedirect(redirectUri: string): { redirectTarget: string; redirectNote?: string } {
  const url = URL.parse(redirectUri);
  if (!url) return { redirectTarget: redirectUri };
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
    return loopback
      ? { redirectTarget: url.host, redirectNote: 'an app on this computer' }
      : { redirectTarget: url.host };
  }
  // A private-use scheme (com.example.app:/oauth2redirect) names the app; shown as registered, not rebuilt.
  return {
    redirectTarget: url.host ? `${url.protocol}//${url.host}` : url.protocol,
    redirectNote: 'an app on this computer',
  };
}
