// An account's voice: the editor for every field the voice holds (saved as a new version, with If-Match
// so that a save based on an outdated version is refused), its version history, and a side-by-side diff
// of any two versions.

import type { Response, Router } from 'express';
import { namesForWrite } from '../../api/etag.ts';
import type { Pipeline } from '../../api/pipeline.ts';
import type { Role } from '../../authz/policy.ts';
import { mergeStale } from '../edit-in-place.ts';
import { firstDuplicateName } from '../json-duplicate-names.ts';
import {
  edited,
  formErrors,
  isOk,
  jsonPlace,
  type Kit,
  multiline,
  newestVersions,
  type PageContext,
  pathOf,
  words,
} from '../kit.ts';
import { boundedWordDiff } from '../word-diff.ts';

interface Voice {
  version: number;
  etag: string;
  tone: string;
  formality: string;
  targetAudience: string;
  guidelines: string;
  targetCountries: string[];
  culturalNotes: string;
  localeOverrides: Record<string, unknown>;
  changeNote: string;
  author: string | null;
  createdAt: string;
}

type VoiceValues = Record<
  | 'tone'
  | 'formality'
  | 'targetAudience'
  | 'guidelines'
  | 'targetCountries'
  | 'culturalNotes'
  | 'localeOverrides'
  | 'changeNote'
  | 'etag',
  string
>;

/** The fields a diff compares, with their labels, as text. */
const DIFF_FIELDS: [keyof Voice, string][] = [
  ['tone', 'Tone'],
  ['formality', 'Formality'],
  ['targetAudience', 'Target audience'],
  ['guidelines', 'Guidelines'],
  ['targetCountries', 'Target countries'],
  ['culturalNotes', 'Cultural notes'],
  ['localeOverrides', 'Locale overrides'],
  ['changeNote', 'Change note'],
];

const asText = (value: unknown) =>
  Array.isArray(value)
    ? value.join(' ')
    : typeof value === 'object'
      ? JSON.stringify(value, null, 2)
      : String(value);

/** The fields a stale form is merged by (mergeStale): the voice's own, not the change note or the tag. */
const MERGED_FIELDS = DIFF_FIELDS.map(([field]) => field).filter(
  (field): field is Exclude<keyof VoiceValues, 'changeNote' | 'etag'> => field !== 'changeNote',
);
const labelOf = (field: string) => DIFF_FIELDS.find(([key]) => key === field)![1];

/** The form's fields as the editor shows a version (or an empty voice, before the first save). */
function formValuesOf(voice: Voice | undefined): VoiceValues {
  return {
    tone: voice?.tone ?? '',
    formality: voice?.formality ?? 'neutral',
    targetAudience: voice?.targetAudience ?? '',
    guidelines: voice?.guidelines ?? '',
    targetCountries: voice ? asText(voice.targetCountries) : '',
    culturalNotes: voice?.culturalNotes ?? '',
    localeOverrides: voice ? asText(voice.localeOverrides) : '{}',
    changeNote: '',
    etag: voice?.etag ?? '',
  };
}

export function voicePages(router: Router, kit: Kit, pipeline: Pipeline): void {
  async function role(pc: PageContext, account: string): Promise<Role | null> {
    const r = await pc.call('getAccount', { params: { account } });
    return isOk(r) ? (r.body as { role: Role | null }).role : null;
  }

  const crumbs = (account: string, last: { label: string; href?: string }[]) => [
    { href: '/dashboard', label: 'Dashboard' },
    { href: pathOf('accounts', account), label: `@${account}` },
    ...last,
  ];

  async function editor(
    res: Response,
    pc: PageContext,
    account: string,
    extra: {
      status?: number;
      values?: VoiceValues;
      fields?: object;
      form?: string[];
      notice?: string;
      /** The form was built on an older version: it now carries the current one's ETag (see stale). */
      stale?: boolean;
    } = {},
  ) {
    // The account first: a 404 from getVoice means "nothing saved yet" only on an account one can see.
    const acc = await pc.call('getAccount', { params: { account } });
    if (!isOk(acc)) return kit.problemPage(res, pc, acc);
    const myRole = (acc.body as { role: Role | null }).role;
    const r = await pc.call('getVoice', { params: { account } });
    if (!isOk(r) && r.status !== 404) return kit.problemPage(res, pc, r);
    const voice = isOk(r) ? (r.body as Voice) : undefined;
    // A form refused as stale keeps what was typed, merged onto the current version (mergeStale) and
    // carrying its ETag: saved again, it builds on that version knowingly, where with its old ETag it would
    // be refused again and again.
    let values = extra.values;
    let form = extra.form ?? [];
    if (extra.stale && voice && extra.values) {
      const builtOn = /^(?:W\/)?"v(\d+)/.exec(extra.values.etag)?.[1];
      const base = builtOn
        ? await pc.call('getVoice', { params: { account }, query: { version: Number(builtOn) } })
        : undefined;
      // Saved again whole, the form used to put back every field someone else had changed meanwhile (their
      // new tone undone by an edit of the guidelines).
      const merged = mergeStale(
        extra.values,
        formValuesOf(base && isOk(base) ? (base.body as Voice) : undefined),
        formValuesOf(voice),
        MERGED_FIELDS,
      );
      values = { ...merged.values, etag: voice.etag };
      form = [
        `Someone saved version ${voice.version} while you were editing; nothing was saved. The fields you did not change now show version ${voice.version}, the ones you changed keep your text: check and save again.`,
        ...(merged.both.length > 0
          ? [
              `You and they both changed ${merged.both.map(labelOf).join(', ')}: yours is shown, and saving replaces theirs (the history shows version ${voice.version}).`,
            ]
          : []),
      ];
    }
    kit.render(
      res,
      pc,
      'voice',
      {
        title: `Voice of @${account}`,
        section: 'dashboard',
        crumbs: crumbs(account, [{ label: 'Voice' }]),
        acting: { handle: account, role: myRole },
        notice: extra.notice,
        account,
        voice,
        canEdit: pipeline.allows(myRole, 'voice:write'),
        values: values ?? formValuesOf(voice),
        fields: extra.fields ?? {},
        form,
      },
      extra.status,
    );
  }

  router.get(
    '/accounts/:account/voice',
    kit.page(async (req, res, pc) => {
      await editor(res, pc, String(req.params.account), { notice: kit.noticeOf(req, pc) });
    }),
  );

  router.post(
    '/accounts/:account/voice',
    ...kit.action(async (req, res, pc) => {
      const account = String(req.params.account);
      // The version the form was built from, when it is still the current one: a text the person left
      // alone is saved as stored (kit.edited), not as the browser gave it back. A stale form is refused
      // by the save anyway.
      const etag = multiline(req.body, 'etag');
      const current = etag === '' ? undefined : await pc.call('getVoice', { params: { account } });
      const shown =
        current && isOk(current) && namesForWrite(etag, (current.body as Voice).etag)
          ? (current.body as Voice)
          : undefined;
      const stored = (field: string) => {
        const value = shown?.[field as keyof Voice];
        return typeof value === 'string' ? value : undefined;
      };
      const values = Object.fromEntries(
        [
          'tone',
          'formality',
          'targetAudience',
          'guidelines',
          'targetCountries',
          'culturalNotes',
          'localeOverrides',
          'changeNote',
          'etag',
        ].map((field) => [field, edited(req.body, field, stored(field))]),
      ) as VoiceValues;
      let overrides: unknown;
      try {
        overrides = values.localeOverrides.trim() === '' ? {} : JSON.parse(values.localeOverrides);
      } catch {
        return editor(res, pc, account, {
          status: 400,
          values,
          fields: {
            localeOverrides: 'Write the overrides as JSON, for example {"de-CH": {"formality": "formal"}}.',
          },
        });
      }
      const twice = firstDuplicateName(values.localeOverrides);
      if (twice) {
        return editor(res, pc, account, {
          status: 400,
          values,
          fields: {
            localeOverrides: `${jsonPlace(twice)} is written twice: only the last would be kept. Write it once, with everything it should hold.`,
          },
        });
      }
      const stale = () => editor(res, pc, account, { status: 412, values, stale: true });
      // A form built when nothing was saved yet has no ETag: it saves only if nothing is saved still
      // (If-None-Match: *, checked in the save's turn), so a first version someone saved meanwhile is not
      // replaced unseen.
      const r = await pc.call('saveVoice', {
        params: { account },
        ...(values.etag === '' ? { ifNoneMatch: '*' } : { ifMatch: values.etag }),
        body: {
          tone: values.tone,
          formality: values.formality,
          targetAudience: values.targetAudience,
          guidelines: values.guidelines,
          // Country codes are capitals (ISO 3166); `de` typed in the form is meant as DE.
          targetCountries: words(values.targetCountries).map((code) => code.toUpperCase()),
          culturalNotes: values.culturalNotes,
          localeOverrides: overrides,
          changeNote: values.changeNote,
        },
      });
      if (isOk(r)) {
        const saved = r.body as Voice;
        const path = pathOf('accounts', account, 'voice');
        return res.redirect(303, kit.withNotice(pc, path, `Saved as version ${saved.version}.`));
      }
      if (r.status === 412) return stale();
      if (r.status !== 400) return kit.problemPage(res, pc, r);
      await editor(res, pc, account, { status: 400, values, ...formErrors(r, ['localeOverrides']) });
    }),
  );

  router.get(
    '/accounts/:account/voice/history',
    kit.page(async (req, res, pc) => {
      const account = String(req.params.account);
      const history = await newestVersions<{ version: number }>(pc.call, 'listVoiceVersions', account);
      if ('failed' in history) return kit.problemPage(res, pc, history.failed);
      const { versions, total } = history;
      kit.render(res, pc, 'voice-history', {
        title: `Voice history of @${account}`,
        section: 'dashboard',
        crumbs: crumbs(account, [
          { href: pathOf('accounts', account, 'voice'), label: 'Voice' },
          { label: 'History' },
        ]),
        acting: { handle: account, role: await role(pc, account) },
        account,
        versions,
        total,
        from: versions[1]?.version,
        to: versions[0]?.version,
      });
    }),
  );

  router.get(
    '/accounts/:account/voice/diff',
    kit.page(async (req, res, pc) => {
      const account = String(req.params.account);
      const [from, to] = [req.query.from, req.query.to].map((v) => (typeof v === 'string' ? v : ''));
      const [a, b] = await Promise.all(
        [from, to].map((version) => pc.call('getVoice', { params: { account }, query: { version } })),
      );
      for (const r of [a!, b!]) if (!isOk(r)) return kit.problemPage(res, pc, r);
      const older = a!.body as Voice;
      const newer = b!.body as Voice;
      const wordDiff = boundedWordDiff();
      kit.render(res, pc, 'voice-diff', {
        title: `Voice of @${account}: version ${older.version} and ${newer.version}`,
        section: 'dashboard',
        crumbs: crumbs(account, [
          { href: pathOf('accounts', account, 'voice'), label: 'Voice' },
          { href: pathOf('accounts', account, 'voice', 'history'), label: 'History' },
          { label: 'Diff' },
        ]),
        acting: { handle: account, role: await role(pc, account) },
        account,
        older,
        newer,
        rows: DIFF_FIELDS.map(([key, label]) => {
          const parts = wordDiff(asText(older[key]), asText(newer[key]));
          return { label, changed: parts.some((p) => p.added || p.removed), parts };
        }),
      });
    }),
  );
}
